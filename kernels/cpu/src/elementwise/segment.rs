//! The map driver's inner loops: a task's elements visited run by run (linear walk) or tile
//! by tile (tiled walk), each run computed block by block — inputs staged through block
//! buffers where they need a conversion or a gather, the block function called, the output
//! converted, quantized or streamed — or, for runs of quantized bytes, in one pass
//! ([`crate::byte_map`]).

use super::*;
/// Stages a tile: `dst[i * TILE_COLS + c] = src[starts[i] + c * col_stride]` for every row
/// `i` and column `c < n`, converting to `ddt`. Walks down each column so an input that is
/// contiguous along rows (a transposed operand) is read sequentially.
///
/// # Safety
/// Every addressed source element is in bounds; `dst` holds `starts.len() * TILE_COLS`
/// elements of `ddt`.
unsafe fn gather_tile(
    dst: *mut u8,
    ddt: DType,
    src: *mut u8,
    sdt: DType,
    starts: &[isize],
    col_stride: isize,
    n: usize,
) {
    with_dtype!(ddt, D => with_dtype!(sdt, S => {
        let (d, s) = (dst as *mut D, src as *const S);
        for c in 0..n {
            let col = c as isize * col_stride;
            for (i, &st) in starts.iter().enumerate() {
                // SAFETY: caller's contract.
                unsafe { d.add(i * TILE_COLS + c).write(s.offset(st + col).read_unaligned().cast::<D>()) };
            }
        }
    }))
}

/// One 64-byte-aligned block buffer, left uninitialised until written.
#[repr(C, align(64))]
struct Buf([MaybeUninit<u8>; BUF_BYTES]);

/// Block buffers of one task: one per operand, and one more for a streamed output's
/// conversion to its dtype.
type Bufs = [Buf; MAX_OPERANDS + 1];

/// Index in [`Bufs`] of the streamed output's conversion buffer.
const CAST_BUF: usize = MAX_OPERANDS;

/// Uninitialised block buffers.
const fn new_bufs() -> Bufs {
    [const { Buf([MaybeUninit::uninit(); BUF_BYTES]) }; MAX_OPERANDS + 1]
}

impl Call<'_> {
    /// Visits flattened elements `range` run by run, block by block.
    ///
    /// # Safety
    /// As [`run_map`]; `range` lies within the plan and no other task touches it.
    pub(super) unsafe fn linear(&self, range: std::ops::Range<usize>) {
        let inner_len = self.plan.inner_len();
        let mut bufs = new_bufs();
        let mut row_base = [0isize; MAX_OPERANDS];
        let mut i = range.start;
        while i < range.end {
            let (row, col) = (i / inner_len, i % inner_len);
            self.plan.row_offsets(row, &mut row_base[..self.ops.len()]);
            let n = (inner_len - col).min(range.end - i);
            // SAFETY: (row, col..col+n) lies in this task's range.
            unsafe { self.run_segment(&mut bufs, &row_base, col, n) };
            i += n;
        }
    }

    /// Visits bands `bands` (of TILE_ROWS rows each) column chunk by column chunk.
    ///
    /// # Safety
    /// As [`run_map`]; the bands' rows belong to this task only.
    pub(super) unsafe fn tiled(&self, bands: std::ops::Range<usize>) {
        let (inner_len, rows) = (self.plan.inner_len(), self.plan.outer_rows());
        let nops = self.ops.len();
        let mut bufs = new_bufs();
        // Inputs strided along the run but contiguous along rows (a transposed operand) are
        // staged a whole tile at a time: read down each column (sequential in memory),
        // written across the tile, so neither the strided reads' cache sets nor their pages
        // are revisited element by element.
        let tile_inputs: Vec<usize> =
            (1..nops).filter(|&j| self.ops[j].kind == RunKind::Staged && self.inner[j].abs() > 1).collect();
        let cs = self.kernel.compute.size();
        let mut tiles: Vec<Vec<MaybeUninit<u8>>> =
            tile_inputs.iter().map(|_| vec![MaybeUninit::uninit(); self.tile_rows * TILE_COLS * cs]).collect();
        let mut offs = vec![[0isize; MAX_OPERANDS]; self.tile_rows];
        let mut starts = vec![0isize; self.tile_rows];
        for band in bands {
            let (r0, r1) = (band * self.tile_rows, ((band + 1) * self.tile_rows).min(rows));
            for (i, row) in (r0..r1).enumerate() {
                self.plan.row_offsets(row, &mut offs[i][..nops]);
            }
            for c0 in (0..inner_len).step_by(TILE_COLS) {
                let n = TILE_COLS.min(inner_len - c0);
                for (t, &j) in tile_inputs.iter().enumerate() {
                    let op = self.ops[j];
                    let tile = tiles[t].as_mut_ptr() as *mut u8;
                    for (st, off) in starts.iter_mut().zip(&offs[..r1 - r0]) {
                        *st = off[j] + c0 as isize * self.inner[j];
                    }
                    // SAFETY: every (row, column) of the tile is an element of this task's
                    // rows of the input, in bounds; the tile buffer holds TILE_ROWS x
                    // TILE_COLS compute elements.
                    unsafe {
                        gather_tile(tile, self.kernel.compute, op.base, op.dtype, &starts[..r1 - r0], self.inner[j], n);
                        if let Some(a) = &op.affine {
                            // Quantized rows compute in f32 (checked): each row's n values.
                            for i in 0..r1 - r0 {
                                dequantize_in_place((tile as *mut f32).add(i * TILE_COLS), n, a);
                            }
                        }
                    };
                }
                for (i, off) in offs[..r1 - r0].iter().enumerate() {
                    let mut pre = [None; MAX_OPERANDS];
                    for (t, &j) in tile_inputs.iter().enumerate() {
                        pre[j] = Some(tiles[t].as_ptr().wrapping_add(i * TILE_COLS * cs) as *const u8);
                    }
                    // SAFETY: row r0+i is in this task's band; c0..c0+n within the row; the
                    // pre-staged rows hold n compute elements each.
                    unsafe { self.run_segment_with(&mut bufs, off, c0, n, &pre) };
                }
            }
        }
    }

    /// Computes elements `col..col+n` of the run starting at `row_base`, block by block.
    ///
    /// # Safety
    /// The run's elements belong to the calling task.
    unsafe fn run_segment(&self, bufs: &mut Bufs, row_base: &[isize], col: usize, n: usize) {
        // SAFETY: forwarded.
        unsafe { self.run_segment_with(bufs, row_base, col, n, &[None; MAX_OPERANDS]) }
    }

    /// [`Self::run_segment`] where `pre[j]`, when set, is input `j`'s run already staged
    /// (contiguous, compute dtype, `n` elements, `n` ≤ one block).
    ///
    /// # Safety
    /// As [`Self::run_segment`].
    unsafe fn run_segment_with(
        &self,
        bufs: &mut Bufs,
        row_base: &[isize],
        col: usize,
        n: usize,
        pre: &[Option<*const u8>; MAX_OPERANDS],
    ) {
        let k = self.kernel;
        let streamed = self.ops[0].kind == RunKind::Streamed;
        if let (Some(codes), Some(f)) = (&self.bytes, k.bytes) {
            debug_assert!(pre.iter().all(Option::is_none), "byte runs are walked linearly");
            // The whole run in one pass (every operand a byte an element, stride 1).
            let c = col as isize;
            let at = |j: usize| self.ops[j].base.wrapping_offset(row_base[j] + c);
            let mut ins = [std::ptr::null::<u8>(); MAX_OPERANDS - 1];
            for (j, p) in ins.iter_mut().enumerate().take(self.ops.len() - 1) {
                *p = at(j + 1);
            }
            let store = if streamed { Store::Streaming } else { Store::Plain };
            // SAFETY: the run's n elements of each operand are this task's, contiguous one-
            // byte codes of `codes`' family (checked when planned); streaming stores are
            // fenced once per task (run_planned).
            if unsafe { f(at(0), &ins[..self.ops.len() - 1], n, self.params, codes, store) } {
                return;
            }
        }
        let mut in_ptrs = [std::ptr::null::<u8>(); MAX_OPERANDS - 1];
        let nin = self.ops.len() - 1;
        let mut done = 0;
        while done < n {
            let m = (n - done).min(self.block);
            let c = (col + done) as isize;
            for (j, op) in self.ops.iter().enumerate().skip(1) {
                let src = op.base.wrapping_offset((row_base[j] + c * self.inner[j]) * op.dtype.size() as isize);
                let buf = bufs[j].0.as_mut_ptr() as *mut u8;
                if let Some(p) = pre[j] {
                    in_ptrs[j - 1] = p.wrapping_add(done * k.compute.size());
                    continue;
                }
                if streamed && op.kind == RunKind::Staged && self.inner[j] == 1 {
                    prefetch_bytes(src.wrapping_add(m * op.dtype.size()), m * op.dtype.size());
                }
                in_ptrs[j - 1] = match op.kind {
                    RunKind::Direct | RunKind::Streamed => src,
                    RunKind::Splat => {
                        // SAFETY: buf holds BUF_BYTES >= m * size; src is an in-bounds element.
                        unsafe { splat_bytes(buf, src, op.dtype.size(), m) };
                        buf
                    }
                    RunKind::Staged => {
                        // SAFETY: the m elements from src with this stride are elements of
                        // this run (in bounds); buf holds m compute elements.
                        unsafe {
                            // Quantized rows compute in f32 (checked): m values.
                            let widened = match &op.affine {
                                Some(a) if self.inner[j] == 1 => dequantize_widen(buf as *mut f32, src, op.dtype, m, a),
                                _ => false,
                            };
                            if !widened {
                                gather_cast(buf, k.compute, src, op.dtype, self.inner[j], m);
                                if let Some(a) = &op.affine {
                                    dequantize_in_place(buf as *mut f32, m, a);
                                }
                            }
                        }
                        buf
                    }
                };
            }
            let out = self.ops[0];
            let dst = out.base.wrapping_offset((row_base[0] + c * self.inner[0]) * out.dtype.size() as isize);
            let ins = &in_ptrs[..nin];
            match out.kind {
                // SAFETY: dst..dst+m elements are this task's; inputs are valid for m.
                RunKind::Direct => unsafe { (k.func)(dst, ins, m, self.params, Store::Plain) },
                // The kernel's own dtype at a 16-byte-aligned address: the block function
                // streams each vector straight from its registers. Fenced once per task
                // (run_map), not per block.
                // SAFETY: dst..dst+m elements are this task's; inputs are valid for m.
                RunKind::Streamed
                    if out.dtype == k.output && out.affine.is_none() && (dst as usize).is_multiple_of(16) =>
                unsafe { (k.func)(dst, ins, m, self.params, Store::Streaming) },
                RunKind::Streamed => {
                    let buf = bufs[0].0.as_mut_ptr() as *mut u8;
                    // SAFETY: buf holds m output elements (block sized for the widest
                    // dtype); dst is this task's contiguous run of m elements, not
                    // overlapping the stack buffers. The streaming stores are fenced once
                    // per task (run_map), not per block.
                    unsafe {
                        (k.func)(buf, ins, m, self.params, Store::Plain);
                        if let (Some(a), DType::I8 | DType::U8) = (&out.affine, out.dtype) {
                            // f32 results (checked) quantized and streamed from registers.
                            let signed = out.dtype == DType::I8;
                            quantize_bytes(dst, signed, buf as *const f32, m, a, true);
                            done += m;
                            continue;
                        }
                        let staged = if out.dtype == k.output && out.affine.is_none() {
                            buf
                        } else {
                            let cast = bufs[CAST_BUF].0.as_mut_ptr() as *mut u8;
                            match &out.affine {
                                // f32 results (checked) to the integers, in one pass.
                                Some(a) => quantize_narrow(cast, out.dtype, buf as *const f32, m, a),
                                None => scatter_cast(cast, out.dtype, 1, buf, k.output, m),
                            }
                            cast
                        };
                        copy_bytes_nt_unfenced(dst, staged, m * out.dtype.size());
                    }
                }
                _ => {
                    let buf = bufs[0].0.as_mut_ptr() as *mut u8;
                    // SAFETY: buf holds m output elements; then scattered into this run.
                    unsafe {
                        (k.func)(buf, ins, m, self.params, Store::Plain);
                        match &out.affine {
                            // f32 results (checked) to the integers, in one pass.
                            Some(a) if self.inner[0] == 1 => quantize_narrow(dst, out.dtype, buf as *const f32, m, a),
                            Some(a) => {
                                quantize_in_place(buf as *mut f32, m, a);
                                scatter_cast(dst, out.dtype, self.inner[0], buf, k.output, m);
                            }
                            None => scatter_cast(dst, out.dtype, self.inner[0], buf, k.output, m),
                        }
                    }
                }
            }
            done += m;
        }
    }
}

/// Prefetches the `bytes` bytes from `p`, one cache line at a time (a hint: any address is
/// allowed). Used for converted inputs of DRAM-sized calls, whose conversion passes do not
/// overlap the next block's reads otherwise (the same prefetch slowed plain f32 inputs,
/// which the block loop reads and prefetches itself; measurements:
/// `docs/performance-log.md`, “From the code comments”).
#[inline]
fn prefetch_bytes(p: *const u8, bytes: usize) {
    for off in (0..bytes).step_by(64) {
        prefetch(p.wrapping_add(off));
    }
}

/// Writes `n` copies of the `size`-byte element at `src` into `dst`.
///
/// # Safety
/// `src` valid for `size` bytes, `dst` for `n * size`, not overlapping.
unsafe fn splat_bytes(dst: *mut u8, src: *const u8, size: usize, n: usize) {
    macro_rules! splat {
        ($t:ty) => {{
            // SAFETY: caller's contract; unaligned read of one element.
            let v = unsafe { (src as *const $t).read_unaligned() };
            for j in 0..n {
                // SAFETY: j < n, dst is a 64-byte-aligned buffer of n elements.
                unsafe { (dst as *mut $t).add(j).write(v) };
            }
        }};
    }
    match size {
        1 => splat!(u8),
        2 => splat!(u16),
        4 => splat!(u32),
        _ => splat!(u64),
    }
}
