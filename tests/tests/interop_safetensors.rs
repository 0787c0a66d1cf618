//! safetensors: files written by the `safetensors` crate load as zero-copy, read-only views
//! of the mapping, every dtype; saved files read back with the `safetensors` crate; the
//! copying cases (misaligned data, invalid bools) and the error cases.

use safetensors::tensor::{serialize_to_file, Dtype, SafeTensors, TensorView};
use std::path::PathBuf;
use tensor_ops::prelude::*;
use tensor_ops::safetensors_io::{load, save};

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("tensor_ops_{}_{name}.safetensors", std::process::id()))
}

/// The address of a CPU tensor's first element.
fn addr(t: &Tensor) -> usize {
    let g = t.storage().read().unwrap();
    g.as_ptr() as usize + t.storage_offset() * t.elem_size()
}

#[test]
fn files_of_the_reference_writer_load_as_read_only_views_of_the_mapping() {
    let f32s: Vec<u8> = [1.5f32, -2.0, 3.25, 4.0, 5.0, 6.0].iter().flat_map(|x| x.to_le_bytes()).collect();
    let i64s: Vec<u8> = [i64::MIN, 7].iter().flat_map(|x| x.to_le_bytes()).collect();
    let bf16s: Vec<u8> =
        [half::bf16::from_f32(0.5), half::bf16::from_f32(-8.0)].iter().flat_map(|x| x.to_le_bytes()).collect();
    let bools = vec![1u8, 0, 1];
    let u8s = vec![9u8, 8, 7, 6];
    let tensors = vec![
        ("w", TensorView::new(Dtype::F32, vec![2, 3], &f32s).unwrap()),
        ("ids", TensorView::new(Dtype::I64, vec![2], &i64s).unwrap()),
        ("h", TensorView::new(Dtype::BF16, vec![2], &bf16s).unwrap()),
        ("mask", TensorView::new(Dtype::BOOL, vec![3], &bools).unwrap()),
        ("bytes", TensorView::new(Dtype::U8, vec![2, 2], &u8s).unwrap()),
    ];
    let path = temp("reference");
    serialize_to_file(tensors, None, &path).unwrap();
    let raw = std::fs::read(&path).unwrap();
    let parsed = SafeTensors::deserialize(&raw).unwrap();
    let loaded = load(&path).unwrap();
    assert_eq!(loaded.len(), 5);
    let get = |n: &str| loaded.iter().find(|(name, _)| name == n).map(|(_, t)| t.clone()).unwrap();
    assert_eq!(get("w").to_vec::<f32>().unwrap(), vec![1.5, -2.0, 3.25, 4.0, 5.0, 6.0]);
    assert_eq!(get("w").shape(), &[2, 3]);
    assert_eq!(get("ids").to_vec::<i64>().unwrap(), vec![i64::MIN, 7]);
    assert_eq!(get("h").to_vec::<half::bf16>().unwrap(), vec![half::bf16::from_f32(0.5), half::bf16::from_f32(-8.0)]);
    assert_eq!(get("mask").to_vec::<bool>().unwrap(), vec![true, false, true]);
    assert_eq!(get("bytes").to_vec::<u8>().unwrap(), vec![9, 8, 7, 6]);
    // Zero-copy: every tensor is read-only, and the distance between any two in memory is
    // their distance in the file (they all view one mapping).
    let file_offset = |n: &str| parsed.tensor(n).unwrap().data().as_ptr() as usize - raw.as_ptr() as usize;
    for (name, t) in &loaded {
        assert!(t.storage().is_read_only(), "{name}");
        assert_eq!(
            addr(t) as isize - addr(&get("w")) as isize,
            file_offset(name) as isize - file_offset("w") as isize,
            "{name}"
        );
    }
    // Writes are refused; ops make new, writable tensors.
    assert!(matches!(get("w").fill_(0.0), Err(Error::ReadOnly { .. })));
    let doubled = get("w").mul(&get("w")).unwrap();
    doubled.fill_(1.0).unwrap();
    drop(loaded);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn saved_files_read_back_with_the_reference_reader() {
    let a = Tensor::arange(0, 12, 1, DType::F64, Device::Cpu).unwrap().view(&[3, 4]).unwrap();
    let strided = a.t().unwrap().slice(0, 0, 4, 2).unwrap(); // [2, 3], not contiguous
    let flags = Tensor::from_vec(vec![true, false], &[2]).unwrap();
    let path = temp("saved");
    save(&path, &[("strided", &strided), ("flags", &flags)]).unwrap();
    let raw = std::fs::read(&path).unwrap();
    let st = SafeTensors::deserialize(&raw).unwrap();
    let s = st.tensor("strided").unwrap();
    assert_eq!((s.dtype(), s.shape()), (Dtype::F64, &[2usize, 3][..]));
    let vals: Vec<f64> = s.data().chunks(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(vals, strided.to_vec::<f64>().unwrap());
    assert_eq!(st.tensor("flags").unwrap().data(), &[1, 0]);
    // and back through our loader
    let back = load(&path).unwrap();
    assert_eq!(back.iter().find(|(n, _)| n == "strided").unwrap().1.to_vec::<f64>().unwrap(), vals);
    drop(back);
    std::fs::remove_file(&path).unwrap();
}

/// Builds a file by hand: `header` JSON then `data`.
fn handmade(name: &str, header: &str, data: &[u8]) -> PathBuf {
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(data);
    let path = temp(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn misaligned_data_and_invalid_bools_are_copied() {
    // header of 7 bytes + 8 = 15: the f32 data starts at an odd address in the mapping
    let header = r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#;
    let pad = " ".repeat(7 - (header.len() + 8) % 8 + 8 * usize::from((header.len() + 8) % 8 == 7));
    let header = format!("{header}{pad}");
    let data: Vec<u8> = [1.0f32, 2.0].iter().flat_map(|x| x.to_le_bytes()).collect();
    let path = handmade("misaligned", &header, &data);
    let t = &load(&path).unwrap()[0].1;
    assert_eq!(t.to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
    std::fs::remove_file(&path).unwrap();

    let header = r#"{"m":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}}"#;
    let pad = " ".repeat((8 - (header.len() + 8) % 8) % 8);
    let path = handmade("bools", &format!("{header}{pad}"), &[0, 2, 255]);
    let loaded = load(&path).unwrap();
    let m = &loaded[0].1;
    assert_eq!(m.to_vec::<bool>().unwrap(), vec![false, true, true]);
    assert_eq!(m.to_dtype(DType::U8).unwrap().to_vec::<u8>().unwrap(), vec![0, 1, 1]);
    drop(loaded);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn bad_files_are_errors() {
    assert!(load(temp("does_not_exist")).is_err());
    let path = handmade("garbage", "not json", &[]);
    assert!(load(&path).is_err());
    std::fs::remove_file(&path).unwrap();
    // A dtype of the format that tensor-ops does not have (the 8-bit floats it does: f8.rs).
    let header = r#"{"x":{"dtype":"U16","shape":[1],"data_offsets":[0,2]}}"#;
    let pad = " ".repeat((8 - (header.len() + 8) % 8) % 8);
    let path = handmade("u16", &format!("{header}{pad}"), &[0, 0]);
    let err = load(&path).unwrap_err().to_string();
    assert!(err.contains("U16") && err.contains("\"x\""), "{err}");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn save_refuses_names_a_file_cannot_hold_before_writing() {
    let a = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    let b = Tensor::from_vec(vec![3i64], &[1]).unwrap();
    /// What is saved, and what the message must name.
    type Case<'a> = (&'a str, Vec<(&'a str, &'a Tensor)>, &'a [&'a str]);
    let cases: [Case; 3] = [
        ("metadata", vec![("a", &a), ("__metadata__", &b)], &["\"__metadata__\"", "reserves"]),
        ("duplicate", vec![("a", &a), ("b", &b), ("a", &b)], &["\"a\"", "unique"]),
        ("empty", vec![("", &a)], &["empty name", "non-empty"]),
    ];
    for (what, tensors, needles) in cases {
        // No file is created...
        let path = temp(&format!("bad_name_{what}"));
        let _ = std::fs::remove_file(&path);
        let err = save(&path, &tensors).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, Error::InvalidArgument { op: "safetensors::save", .. }), "{what}: {err:?}");
        for n in needles {
            assert!(msg.contains(n), "{what}: {msg:?} lacks {n:?}");
        }
        assert!(!path.exists(), "{what}: no file is created");
        // ...and an existing one is left as it was (not truncated).
        save(&path, &[("kept", &b)]).unwrap();
        let before = std::fs::read(&path).unwrap();
        assert!(save(&path, &tensors).is_err(), "{what}");
        assert_eq!(std::fs::read(&path).unwrap(), before, "{what}: the file is untouched");
        let loaded = load(&path).unwrap();
        assert_eq!((loaded[0].0.as_str(), loaded[0].1.to_vec::<i64>().unwrap()), ("kept", vec![3]));
        drop(loaded);
        std::fs::remove_file(&path).unwrap();
    }
    // Valid names (any other string, in any order) still round-trip.
    let path = temp("good_names");
    save(&path, &[("__meta", &a), ("a.b/c", &b), ("é", &a)]).unwrap();
    let loaded = load(&path).unwrap();
    let get = |n: &str| loaded.iter().find(|(name, _)| name == n).map(|(_, t)| t.clone()).unwrap();
    assert_eq!(loaded.len(), 3);
    assert_eq!(get("__meta").to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
    assert_eq!(get("a.b/c").to_vec::<i64>().unwrap(), vec![3]);
    assert_eq!(get("é").to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
    drop(loaded);
    std::fs::remove_file(&path).unwrap();
}
