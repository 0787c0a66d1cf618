// The CPU-backed stand-in for the CUDA driver (built as `libcuda.so`, loaded by cudarc by
// name from the library search path, exactly as the real driver). Test-only.
//
// - Device memory is host memory (256-byte aligned); a table of live allocations lets every
//   call check its pointers: a launch whose argument block names a pointer that is not a
//   live allocation (a host pointer, a freed block) or is another device's memory, a copy
//   past an allocation's end, a free of a block a stream still uses.
// - `TOPS_STANDIN_DEVICES=N` devices (default 1), sharing the host's memory.
// - Each stream is a worker thread running its queue in order; errors of queued work are
//   sticky and come back from the next synchronisation, as on a GPU.
// - Modules are the host libraries the stand-in's NVRTC builds (see standin.h); a launch runs
//   the grid through the shim (`tops_shim_launch`), after checking grid and block against the
//   device limits, shared memory against the limit, and the argument buffer's size against
//   the kernel's parameter (when passed with CU_LAUNCH_PARAM_BUFFER_SIZE).
// - Fault injection: `TOPS_STANDIN_FAIL=alloc:N[:K],launch:N[:K],copy:N[:K]` (or
//   `tops_standin_inject`) makes the N-th next call of that kind (and the K-1 after it) fail
//   with the driver's error code.
// - Every check that fires is also recorded (`tops_standin_take_violations`), so a test
//   harness fails a test even when the backend swallowed the error.

#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "standin.h"

#define EXPORT extern "C" __attribute__((visibility("default")))

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

enum : CUresult {
    OK = 0,
    INVALID_VALUE = 1,
    OUT_OF_MEMORY = 2,
    NOT_INITIALIZED = 3,
    NO_DEVICE = 100,
    INVALID_DEVICE = 101,
    INVALID_IMAGE = 200,
    INVALID_CONTEXT = 201,
    INVALID_HANDLE = 400,
    ILLEGAL_STATE = 401,
    NOT_FOUND = 500,
    ILLEGAL_ADDRESS = 700,
    LAUNCH_OUT_OF_RESOURCES = 701,
    NOT_SUPPORTED = 801,
    UNKNOWN = 999,
};

namespace {

// ---- limits of the simulated device (an sm_90-like part) ----
constexpr int MAX_THREADS = 1024, MAX_BLOCK_XY = 1024, MAX_BLOCK_Z = 64;
constexpr long long MAX_GRID_X = 2147483647LL, MAX_GRID_YZ = 65535;
constexpr int MAX_SHARED = 48 * 1024, SM_COUNT = 4, CC_MAJOR = 9, CC_MINOR = 0;
constexpr size_t ALIGN = 256;

size_t total_memory() {
    const char* s = std::getenv("TOPS_STANDIN_MEMORY_MB");
    return (s ? std::strtoull(s, nullptr, 10) : 4096ULL) << 20;
}

int device_count() {
    const char* s = std::getenv("TOPS_STANDIN_DEVICES");
    int n = s ? std::atoi(s) : 1;
    return n < 0 ? 0 : n;
}

std::mutex g_lock; // guards everything below that is not a stream's own queue
std::atomic<bool> g_init{false};
std::vector<std::string> g_violations;

std::atomic<bool> g_expected{false}; // the running test provokes the checks on purpose

void violation(const std::string& what) {
    std::lock_guard<std::mutex> l(g_lock);
    if (g_expected.load())
        std::fprintf(stderr, "cuda stand-in (expected: the test provokes this check): %s\n", what.c_str());
    else
        std::fprintf(stderr, "cuda stand-in: %s\n", what.c_str());
    g_violations.push_back(what);
}

std::string hex(unsigned long long p) {
    char b[32];
    std::snprintf(b, sizeof b, "0x%llx", p);
    return b;
}

// ---- fault injection ----
enum Kind { ALLOC = 0, LAUNCH = 1, COPY = 2 };
struct Fault {
    long long countdown = 0; // fail when it reaches 1 (0: off)
    long long repeat = 0;    // failures left once started
};
Fault g_faults[3];

bool inject(Kind k) {
    std::lock_guard<std::mutex> l(g_lock);
    Fault& f = g_faults[k];
    if (f.countdown > 0) {
        if (--f.countdown > 0) return false;
        --f.repeat; // this call is the first failure
        return true;
    }
    if (f.repeat > 0) {
        --f.repeat;
        return true;
    }
    return false;
}

void set_fault(int kind, long long nth, long long count) {
    if (kind < 0 || kind > 2) return;
    std::lock_guard<std::mutex> l(g_lock);
    g_faults[kind].countdown = nth > 0 ? nth : 0;
    g_faults[kind].repeat = nth > 0 ? (count > 0 ? count : 1) : 0;
}

void parse_fault_env() {
    const char* s = std::getenv("TOPS_STANDIN_FAIL");
    if (!s) return;
    std::string all(s);
    size_t start = 0;
    while (start <= all.size()) {
        size_t end = all.find(',', start);
        std::string item = all.substr(start, end == std::string::npos ? std::string::npos : end - start);
        char name[16] = {0};
        long long nth = 0, count = 1;
        if (std::sscanf(item.c_str(), "%15[a-z]:%lld:%lld", name, &nth, &count) >= 2) {
            int kind = !std::strcmp(name, "alloc") ? 0 : !std::strcmp(name, "launch") ? 1 : !std::strcmp(name, "copy") ? 2 : -1;
            set_fault(kind, nth, count);
        }
        if (end == std::string::npos) break;
        start = end + 1;
    }
}

// ---- contexts ----
struct Context {
    int device;
};
std::vector<Context*> g_contexts;
thread_local Context* t_current = nullptr;

// ---- streams ----
struct Stream;
struct Allocation {
    size_t size;
    int device = 0;                   // the device of the context it was allocated in
    bool freeing = false;             // a stream-ordered free is queued
    std::map<Stream*, long> inflight; // queued work per stream that uses it
};
std::map<CUdeviceptr, Allocation> g_allocs; // base → allocation
size_t g_live_bytes = 0;

struct Work {
    std::function<CUresult()> run;
    std::vector<CUdeviceptr> uses; // allocation bases
    std::string what;
};

std::atomic<bool> g_hold{false}; // tops_standin_hold: workers start no work while set

struct Stream {
    std::mutex m;
    std::condition_variable cv;
    std::deque<Work> queue;
    bool busy = false;
    CUresult sticky = OK;
    std::thread worker;

    Stream() : worker([this] { loop(); }) { worker.detach(); }

    void loop() {
        for (;;) {
            Work w;
            {
                std::unique_lock<std::mutex> l(m);
                cv.wait(l, [this] { return !queue.empty() && !g_hold; });
                w = std::move(queue.front());
                queue.pop_front();
                busy = true;
            }
            CUresult r = w.run();
            {
                std::lock_guard<std::mutex> g(g_lock);
                for (CUdeviceptr b : w.uses) {
                    auto it = g_allocs.find(b);
                    if (it != g_allocs.end() && --it->second.inflight[this] == 0) it->second.inflight.erase(this);
                }
            }
            if (r != OK) violation("queued work failed (" + w.what + "), error " + std::to_string(r));
            std::lock_guard<std::mutex> l(m);
            if (r != OK && sticky == OK) sticky = r;
            busy = false;
            cv.notify_all();
        }
    }

    /// Queues `w`, whose allocations (already checked live) are marked in use.
    void push(Work w) {
        {
            std::lock_guard<std::mutex> g(g_lock);
            for (CUdeviceptr b : w.uses) {
                auto it = g_allocs.find(b);
                if (it != g_allocs.end()) ++it->second.inflight[this];
            }
        }
        std::lock_guard<std::mutex> l(m);
        queue.push_back(std::move(w));
        cv.notify_all();
    }

    CUresult sync() {
        std::unique_lock<std::mutex> l(m);
        cv.wait(l, [this] { return queue.empty() && !busy; });
        return sticky;
    }
};

Stream* g_default_stream = nullptr;
std::unordered_set<Stream*> g_streams; // every known handle below is checked by lookup

Stream* stream_of(void* s) {
    // 0, CU_STREAM_LEGACY (1) and CU_STREAM_PER_THREAD (2) are the default stream.
    std::lock_guard<std::mutex> l(g_lock);
    if ((uintptr_t)s <= 2) {
        if (!g_default_stream) {
            g_default_stream = new Stream();
            g_streams.insert(g_default_stream);
        }
        return g_default_stream;
    }
    return g_streams.count((Stream*)s) ? (Stream*)s : nullptr;
}

/// The base of the live allocation holding [p, p + bytes), or 0 (and the reason); its device
/// in `*device` when given.
CUdeviceptr find_range(CUdeviceptr p, size_t bytes, std::string* why, int* device = nullptr) {
    std::lock_guard<std::mutex> l(g_lock);
    auto it = g_allocs.upper_bound(p);
    if (it == g_allocs.begin()) {
        *why = hex(p) + " is not a device allocation (a host pointer?)";
        return 0;
    }
    --it;
    const CUdeviceptr base = it->first;
    const size_t size = it->second.size;
    if (p >= base + size || (p == base + size && bytes > 0)) {
        *why = hex(p) + " is not inside a live device allocation (a host pointer, or a freed block?)";
        return 0;
    }
    if (it->second.freeing) {
        *why = hex(p) + " is in a block whose free is already queued";
        return 0;
    }
    if (bytes > size - (p - base)) {
        *why = "[" + hex(p) + ", +" + std::to_string(bytes) + ") runs past the end of its allocation (" + hex(base) +
               ", " + std::to_string(size) + " bytes)";
        return 0;
    }
    if (device) *device = it->second.device;
    return base;
}

CUresult check_init() { return g_init ? OK : NOT_INITIALIZED; }

// ---- modules and functions ----
typedef void (*LaunchFn)(unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, const void*);
typedef unsigned long long (*ArgSizeFn)();
typedef int (*PointersFn)(const void*, unsigned long long*, int);
struct Module {
    void* lib;
};
struct Function {
    std::string name;
    LaunchFn launch;
    ArgSizeFn argsize;
    PointersFn pointers;
};
std::unordered_set<Module*> g_modules;
std::unordered_set<Function*> g_functions;

bool known_function(Function* f) {
    std::lock_guard<std::mutex> l(g_lock);
    return g_functions.count(f) > 0;
}

CUresult alloc(CUdeviceptr* out, size_t bytes) {
    if (!out) return INVALID_VALUE;
    if (bytes == 0) return INVALID_VALUE;
    if (inject(ALLOC)) return OUT_OF_MEMORY;
    const size_t padded = (bytes + ALIGN - 1) / ALIGN * ALIGN;
    {
        std::lock_guard<std::mutex> l(g_lock);
        if (g_live_bytes + padded > total_memory()) return OUT_OF_MEMORY;
    }
    void* p = std::aligned_alloc(ALIGN, padded);
    if (!p) return OUT_OF_MEMORY;
    std::lock_guard<std::mutex> l(g_lock);
    g_allocs[(CUdeviceptr)(uintptr_t)p] = Allocation{bytes, t_current ? t_current->device : 0, false, {}};
    g_live_bytes += padded;
    *out = (CUdeviceptr)(uintptr_t)p;
    return OK;
}

/// Releases `base` now (its stream work is done).
void release(CUdeviceptr base) {
    std::lock_guard<std::mutex> l(g_lock);
    auto it = g_allocs.find(base);
    if (it == g_allocs.end()) return;
    g_live_bytes -= (it->second.size + ALIGN - 1) / ALIGN * ALIGN;
    g_allocs.erase(it);
    std::free((void*)(uintptr_t)base);
}

/// Checks a free of `p`; `on` is the stream of a stream-ordered free (its own queued uses
/// are fine), null for cuMemFree (any queued use is an error).
CUresult check_free(CUdeviceptr p, Stream* on, const char* api) {
    const char* why = nullptr;
    CUresult r = OK;
    {
        std::lock_guard<std::mutex> l(g_lock);
        auto it = g_allocs.find(p);
        if (it == g_allocs.end() || it->second.freeing) {
            why = "not a live device allocation (double free, or a host pointer?)";
            r = INVALID_VALUE;
        } else {
            for (auto& [s, n] : it->second.inflight)
                if (n > 0 && s != on) {
                    why = "the block is freed while a stream still uses it";
                    r = ILLEGAL_STATE;
                }
            if (!why) it->second.freeing = on != nullptr;
        }
    }
    if (why) violation(std::string(api) + "(" + hex(p) + "): " + why);
    return r;
}

CUresult copy(CUdeviceptr dst, bool dst_dev, CUdeviceptr src, bool src_dev, size_t bytes, void* hstream, const char* api) {
    CUresult e = check_init();
    if (e) return e;
    Stream* s = stream_of(hstream);
    if (!s) return INVALID_HANDLE;
    if (bytes == 0) return OK;
    std::vector<CUdeviceptr> uses;
    for (auto [p, dev, role] : {std::tuple{dst, dst_dev, "destination"}, std::tuple{src, src_dev, "source"}}) {
        if (!dev) {
            if (!p) return INVALID_VALUE;
            continue;
        }
        std::string why;
        CUdeviceptr base = find_range(p, bytes, &why);
        if (!base) {
            violation(std::string(api) + ": the " + role + " " + why);
            return INVALID_VALUE;
        }
        uses.push_back(base);
    }
    if (inject(COPY)) return INVALID_VALUE;
    s->push(Work{[=] {
                     std::memmove((void*)(uintptr_t)dst, (const void*)(uintptr_t)src, bytes);
                     return OK;
                 },
                 uses, api});
    return OK;
}

} // namespace

// ---- control, for tests ----

/// Makes the `nth` next call of `kind` (0 alloc, 1 launch, 2 copy) and the `count - 1`
/// after it fail; `nth` 0 turns it off.
EXPORT void tops_standin_inject(int kind, long long nth, long long count) { set_fault(kind, nth, count); }

/// Marks the checks that fire from now on as provoked on purpose (their messages say so),
/// until called with 0.
EXPORT void tops_standin_expect_checks(int on) { g_expected.store(on != 0); }

/// Copies the checks that fired since the last call into `buf` (lines), clears them and
/// returns how many there were.
EXPORT int tops_standin_take_violations(char* buf, size_t cap) {
    std::lock_guard<std::mutex> l(g_lock);
    std::string all;
    for (auto& v : g_violations) all += v + "\n";
    int n = (int)g_violations.size();
    g_violations.clear();
    if (buf && cap) {
        size_t k = all.size() < cap - 1 ? all.size() : cap - 1;
        std::memcpy(buf, all.data(), k);
        buf[k] = 0;
    }
    return n;
}

/// While `on`, stream workers start no queued work (so a test can act while work is
/// certainly pending); turning it off wakes them.
EXPORT void tops_standin_hold(int on) {
    g_hold = on != 0;
    if (on) return;
    std::vector<Stream*> all;
    {
        std::lock_guard<std::mutex> l(g_lock);
        all.assign(g_streams.begin(), g_streams.end());
    }
    for (Stream* s : all) {
        std::lock_guard<std::mutex> l(s->m);
        s->cv.notify_all();
    }
}

/// Live device allocations (count and bytes).
EXPORT void tops_standin_live(unsigned long long* count, unsigned long long* bytes) {
    std::lock_guard<std::mutex> l(g_lock);
    if (count) *count = g_allocs.size();
    if (bytes) *bytes = g_live_bytes;
}

// ---- initialisation and devices ----

static CUresult sync_all();

EXPORT CUresult cuInit(unsigned flags) {
    if (flags != 0) return INVALID_VALUE;
    static std::once_flag once;
    std::call_once(once, [] {
        // At exit, drain every stream before the globals above are destroyed: a program
        // that returns with work still queued (frees, copies) must not have a detached
        // worker touch g_lock / g_allocs after their destructors ran. Registered after
        // they were constructed, so it runs before they go.
        // (Not while a test holds the workers: that work never runs.)
        std::atexit([] {
            if (!g_hold) sync_all();
        });
        {
            std::lock_guard<std::mutex> l(g_lock);
            for (int i = 0; i < device_count(); ++i) g_contexts.push_back(new Context{i});
        }
        parse_fault_env();
        g_init = true;
    });
    return OK;
}

EXPORT CUresult cuDriverGetVersion(int* v) {
    if (!v) return INVALID_VALUE;
    *v = 13000;
    return OK;
}

EXPORT CUresult cuDeviceGetCount(int* n) {
    if (CUresult e = check_init()) return e;
    if (!n) return INVALID_VALUE;
    *n = device_count();
    return OK;
}

EXPORT CUresult cuDeviceGet(CUdevice* d, int ordinal) {
    if (CUresult e = check_init()) return e;
    if (!d) return INVALID_VALUE;
    if (ordinal < 0 || ordinal >= device_count()) return INVALID_DEVICE;
    *d = ordinal;
    return OK;
}

EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice d) {
    if (CUresult e = check_init()) return e;
    if (d < 0 || d >= device_count()) return INVALID_DEVICE;
    if (!name || len <= 0) return INVALID_VALUE;
    std::snprintf(name, (size_t)len, "tensor-ops CUDA stand-in on the CPU (not a GPU)");
    return OK;
}

EXPORT CUresult cuDeviceGetAttribute(int* v, int attr, CUdevice d) {
    if (CUresult e = check_init()) return e;
    if (d < 0 || d >= device_count()) return INVALID_DEVICE;
    if (!v) return INVALID_VALUE;
    switch (attr) {
    case 1: *v = MAX_THREADS; break;                       // MAX_THREADS_PER_BLOCK
    case 2: case 3: *v = MAX_BLOCK_XY; break;              // MAX_BLOCK_DIM_X/Y
    case 4: *v = MAX_BLOCK_Z; break;                       // MAX_BLOCK_DIM_Z
    case 5: *v = (int)MAX_GRID_X; break;                   // MAX_GRID_DIM_X
    case 6: case 7: *v = (int)MAX_GRID_YZ; break;          // MAX_GRID_DIM_Y/Z
    case 8: *v = MAX_SHARED; break;                        // MAX_SHARED_MEMORY_PER_BLOCK
    case 10: *v = 32; break;                               // WARP_SIZE
    case 16: *v = SM_COUNT; break;                         // MULTIPROCESSOR_COUNT
    case 38: *v = 4 << 20; break;                          // L2_CACHE_SIZE
    case 75: *v = CC_MAJOR; break;                         // COMPUTE_CAPABILITY_MAJOR
    case 76: *v = CC_MINOR; break;                         // COMPUTE_CAPABILITY_MINOR
    case 115: *v = 1; break;                               // MEMORY_POOLS_SUPPORTED
    default: *v = 0; break;
    }
    return OK;
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice d) {
    if (CUresult e = check_init()) return e;
    if (d < 0 || d >= device_count()) return INVALID_DEVICE;
    if (!bytes) return INVALID_VALUE;
    *bytes = total_memory();
    return OK;
}

EXPORT CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total) {
    if (CUresult e = check_init()) return e;
    if (!t_current) return INVALID_CONTEXT;
    std::lock_guard<std::mutex> l(g_lock);
    if (total) *total = total_memory();
    if (free_bytes) *free_bytes = total_memory() - g_live_bytes;
    return OK;
}

// ---- contexts ----

EXPORT CUresult cuDevicePrimaryCtxRetain(void** ctx, CUdevice d) {
    if (CUresult e = check_init()) return e;
    if (d < 0 || d >= device_count()) return INVALID_DEVICE;
    if (!ctx) return INVALID_VALUE;
    *ctx = g_contexts[(size_t)d];
    return OK;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
    return d < 0 || d >= device_count() ? INVALID_DEVICE : OK;
}

EXPORT CUresult cuCtxSetCurrent(void* ctx) {
    if (CUresult e = check_init()) return e;
    if (ctx) {
        bool ok = false;
        for (Context* c : g_contexts) ok |= c == ctx;
        if (!ok) return INVALID_CONTEXT;
    }
    t_current = (Context*)ctx;
    return OK;
}

EXPORT CUresult cuCtxGetCurrent(void** ctx) {
    if (CUresult e = check_init()) return e;
    if (!ctx) return INVALID_VALUE;
    *ctx = t_current;
    return OK;
}

EXPORT CUresult cuCtxGetDevice(CUdevice* d) {
    if (!t_current) return INVALID_CONTEXT;
    if (!d) return INVALID_VALUE;
    *d = t_current->device;
    return OK;
}

static CUresult sync_all() {
    std::vector<Stream*> all;
    {
        std::lock_guard<std::mutex> l(g_lock);
        all.assign(g_streams.begin(), g_streams.end());
    }
    CUresult first = OK;
    for (Stream* s : all) {
        CUresult r = s->sync();
        if (r && !first) first = r;
    }
    return first;
}

EXPORT CUresult cuCtxSynchronize() {
    if (!t_current) return INVALID_CONTEXT;
    return sync_all();
}
EXPORT CUresult cuCtxSynchronize_v2(void*) { return cuCtxSynchronize(); }

// ---- streams ----

EXPORT CUresult cuStreamCreate(void** out, unsigned flags) {
    if (CUresult e = check_init()) return e;
    if (!t_current) return INVALID_CONTEXT;
    if (!out || flags > 1) return INVALID_VALUE;
    Stream* s = new Stream();
    std::lock_guard<std::mutex> l(g_lock);
    g_streams.insert(s);
    *out = s;
    return OK;
}

EXPORT CUresult cuStreamSynchronize(void* hstream) {
    if (CUresult e = check_init()) return e;
    Stream* s = stream_of(hstream);
    return s ? s->sync() : INVALID_HANDLE;
}

EXPORT CUresult cuStreamQuery(void* hstream) {
    Stream* s = stream_of(hstream);
    if (!s) return INVALID_HANDLE;
    std::lock_guard<std::mutex> l(s->m);
    return s->queue.empty() && !s->busy ? s->sticky : 600; // CUDA_ERROR_NOT_READY
}

EXPORT CUresult cuStreamDestroy_v2(void* hstream) {
    Stream* s = stream_of(hstream);
    if (!s || s == g_default_stream) return INVALID_HANDLE;
    // The worker keeps running (detached) once its queue drains; the stream stays known so
    // late handles are still recognised. Streams live as long as the process here.
    return s->sync();
}
EXPORT CUresult cuStreamDestroy(void* hstream) { return cuStreamDestroy_v2(hstream); }

// ---- memory ----

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* out, size_t bytes) {
    if (CUresult e = check_init()) return e;
    if (!t_current) return INVALID_CONTEXT;
    return alloc(out, bytes);
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr* out, size_t bytes, void* hstream) {
    if (CUresult e = check_init()) return e;
    if (!t_current) return INVALID_CONTEXT;
    if (!stream_of(hstream)) return INVALID_HANDLE;
    return alloc(out, bytes);
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p) {
    if (CUresult e = check_init()) return e;
    if (CUresult e = check_free(p, nullptr, "cuMemFree")) return e;
    release(p);
    return OK;
}

EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, void* hstream) {
    if (CUresult e = check_init()) return e;
    Stream* s = stream_of(hstream);
    if (!s) return INVALID_HANDLE;
    if (CUresult e = check_free(p, s, "cuMemFreeAsync")) return e;
    s->push(Work{[p] {
                     release(p);
                     return OK;
                 },
                 {}, "cuMemFreeAsync"});
    return OK;
}

EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t bytes, void* s) {
    return copy(dst, true, (CUdeviceptr)(uintptr_t)src, false, bytes, s, "cuMemcpyHtoDAsync");
}
EXPORT CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t bytes, void* s) {
    return copy((CUdeviceptr)(uintptr_t)dst, false, src, true, bytes, s, "cuMemcpyDtoHAsync");
}
EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes, void* s) {
    return copy(dst, true, src, true, bytes, s, "cuMemcpyDtoDAsync");
}
EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t bytes) {
    CUresult r = cuMemcpyHtoDAsync_v2(dst, src, bytes, nullptr);
    return r ? r : sync_all();
}
EXPORT CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t bytes) {
    CUresult r = cuMemcpyDtoHAsync_v2(dst, src, bytes, nullptr);
    return r ? r : sync_all();
}
EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
    CUresult r = cuMemcpyDtoDAsync_v2(dst, src, bytes, nullptr);
    return r ? r : sync_all();
}

EXPORT CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, void* hstream) {
    if (CUresult e = check_init()) return e;
    Stream* s = stream_of(hstream);
    if (!s) return INVALID_HANDLE;
    if (n == 0) return OK;
    std::string why;
    CUdeviceptr base = find_range(dst, n, &why);
    if (!base) {
        violation("cuMemsetD8Async: " + why);
        return INVALID_VALUE;
    }
    if (inject(COPY)) return INVALID_VALUE;
    s->push(Work{[=] {
                     std::memset((void*)(uintptr_t)dst, v, n);
                     return OK;
                 },
                 {base}, "cuMemsetD8Async"});
    return OK;
}

// ---- events ----

namespace {
struct Event {
    std::mutex m;
    std::condition_variable cv;
    bool complete = true; // a new event counts as reached
    std::chrono::steady_clock::time_point at{};
};
std::unordered_set<Event*> g_events;

Event* event_of(void* e) {
    std::lock_guard<std::mutex> l(g_lock);
    return g_events.count((Event*)e) ? (Event*)e : nullptr;
}
} // namespace

EXPORT CUresult cuEventCreate(void** out, unsigned) {
    if (CUresult e = check_init()) return e;
    if (!t_current) return INVALID_CONTEXT;
    if (!out) return INVALID_VALUE;
    Event* ev = new Event();
    std::lock_guard<std::mutex> l(g_lock);
    g_events.insert(ev);
    *out = ev;
    return OK;
}

EXPORT CUresult cuEventRecord(void* e, void* hstream) {
    Event* ev = event_of(e);
    Stream* s = stream_of(hstream);
    if (!ev || !s) return INVALID_HANDLE;
    {
        std::lock_guard<std::mutex> l(ev->m);
        ev->complete = false;
    }
    s->push(Work{[ev] {
                     std::lock_guard<std::mutex> l(ev->m);
                     ev->at = std::chrono::steady_clock::now();
                     ev->complete = true;
                     ev->cv.notify_all();
                     return OK;
                 },
                 {}, "cuEventRecord"});
    return OK;
}
EXPORT CUresult cuEventRecordWithFlags(void* e, void* hstream, unsigned) { return cuEventRecord(e, hstream); }

EXPORT CUresult cuEventSynchronize(void* e) {
    Event* ev = event_of(e);
    if (!ev) return INVALID_HANDLE;
    std::unique_lock<std::mutex> l(ev->m);
    ev->cv.wait(l, [ev] { return ev->complete; });
    return OK;
}

EXPORT CUresult cuEventQuery(void* e) {
    Event* ev = event_of(e);
    if (!ev) return INVALID_HANDLE;
    std::lock_guard<std::mutex> l(ev->m);
    return ev->complete ? OK : 600; // CUDA_ERROR_NOT_READY
}

EXPORT CUresult cuEventElapsedTime(float* ms, void* start, void* end) {
    Event *a = event_of(start), *b = event_of(end);
    if (!a || !b) return INVALID_HANDLE;
    if (!ms) return INVALID_VALUE;
    if (cuEventQuery(a) != OK || cuEventQuery(b) != OK) return 600;
    std::chrono::steady_clock::time_point ta, tb;
    {
        std::lock_guard<std::mutex> l(a->m);
        ta = a->at;
    }
    {
        std::lock_guard<std::mutex> l(b->m);
        tb = b->at;
    }
    *ms = std::chrono::duration<float, std::milli>(tb - ta).count();
    return OK;
}
EXPORT CUresult cuEventElapsedTime_v2(float* ms, void* start, void* end) { return cuEventElapsedTime(ms, start, end); }

EXPORT CUresult cuEventDestroy_v2(void* e) {
    Event* ev = event_of(e);
    if (!ev) return INVALID_HANDLE;
    cuEventSynchronize(e); // kept allocated: a queued record may still name it
    return OK;
}
EXPORT CUresult cuEventDestroy(void* e) { return cuEventDestroy_v2(e); }

EXPORT CUresult cuStreamWaitEvent(void* hstream, void* e, unsigned) {
    Event* ev = event_of(e);
    Stream* s = stream_of(hstream);
    if (!ev || !s) return INVALID_HANDLE;
    s->push(Work{[ev] {
                     std::unique_lock<std::mutex> l(ev->m);
                     ev->cv.wait(l, [ev] { return ev->complete; });
                     return OK;
                 },
                 {}, "cuStreamWaitEvent"});
    return OK;
}

// ---- modules ----

EXPORT CUresult cuModuleLoadData(void** module, const void* image) {
    if (CUresult e = check_init()) return e;
    if (!t_current) return INVALID_CONTEXT;
    if (!module || !image) return INVALID_VALUE;
    const char* text = (const char*)image;
    const size_t magic = std::strlen(TOPS_STANDIN_IMAGE_MAGIC);
    if (std::strncmp(text, TOPS_STANDIN_IMAGE_MAGIC, magic) != 0) return INVALID_IMAGE; // a real cubin/PTX
    std::string path(text + magic);
    while (!path.empty() && (path.back() == '\n' || path.back() == '\0')) path.pop_back();
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        violation(std::string("cuModuleLoadData: ") + dlerror());
        return INVALID_IMAGE;
    }
    Module* m = new Module{lib};
    std::lock_guard<std::mutex> l(g_lock);
    g_modules.insert(m);
    *module = m;
    return OK;
}

EXPORT CUresult cuModuleUnload(void* module) {
    std::lock_guard<std::mutex> l(g_lock);
    // kept loaded: launches may still be queued
    return g_modules.count((Module*)module) ? OK : INVALID_HANDLE;
}

EXPORT CUresult cuModuleGetFunction(void** out, void* module, const char* name) {
    if (CUresult e = check_init()) return e;
    if (!out || !name) return INVALID_VALUE;
    Module* m = (Module*)module;
    {
        std::lock_guard<std::mutex> l(g_lock);
        if (!g_modules.count(m)) return INVALID_HANDLE;
    }
    std::string n(name);
    auto launch = (LaunchFn)dlsym(m->lib, (TOPS_STANDIN_LAUNCH + n).c_str());
    auto argsize = (ArgSizeFn)dlsym(m->lib, (TOPS_STANDIN_ARGSIZE + n).c_str());
    auto pointers = (PointersFn)dlsym(m->lib, (TOPS_STANDIN_POINTERS + n).c_str());
    if (!launch || !argsize || !pointers) return NOT_FOUND;
    Function* f = new Function{n, launch, argsize, pointers};
    std::lock_guard<std::mutex> l(g_lock);
    g_functions.insert(f);
    *out = f;
    return OK;
}

// ---- launches ----

EXPORT CUresult cuLaunchKernel(void* func, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned shared, void* hstream, void** params, void** extra) {
    if (CUresult e = check_init()) return e;
    if (!t_current) return INVALID_CONTEXT;
    Function* f = (Function*)func;
    if (!f || !known_function(f)) return INVALID_HANDLE;
    Stream* s = stream_of(hstream);
    if (!s) return INVALID_HANDLE;
    const std::string who = "cuLaunchKernel(" + f->name + ")";
    if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 || gx > MAX_GRID_X || gy > MAX_GRID_YZ ||
        gz > MAX_GRID_YZ || bx > MAX_BLOCK_XY || by > MAX_BLOCK_XY || bz > MAX_BLOCK_Z ||
        (unsigned long long)bx * by * bz > MAX_THREADS) {
        violation(who + ": grid (" + std::to_string(gx) + ", " + std::to_string(gy) + ", " + std::to_string(gz) +
                  ") x block (" + std::to_string(bx) + ", " + std::to_string(by) + ", " + std::to_string(bz) +
                  ") is outside the device limits (block <= 1024 threads, x/y <= 1024, z <= 64; grid x < 2^31, y/z <= 65535)");
        return INVALID_VALUE;
    }
    if (shared > (unsigned)MAX_SHARED) {
        violation(who + ": " + std::to_string(shared) + " bytes of dynamic shared memory, over the limit of " +
                  std::to_string(MAX_SHARED));
        return INVALID_VALUE;
    }
    const size_t need = (size_t)f->argsize();
    std::vector<unsigned char> block(need);
    if (params && extra) {
        violation(who + ": both kernelParams and extra given");
        return INVALID_VALUE;
    }
    if (extra) {
        const void* buf = nullptr;
        const size_t* size = nullptr;
        for (size_t i = 0; extra[i] != nullptr; i += 2) {
            if (extra[i] == (void*)1) buf = extra[i + 1];
            else if (extra[i] == (void*)2) size = (const size_t*)extra[i + 1];
            else return INVALID_VALUE;
        }
        if (!buf || !size) {
            violation(who + ": extra without CU_LAUNCH_PARAM_BUFFER_POINTER and _SIZE");
            return INVALID_VALUE;
        }
        if (*size != need) {
            violation(who + ": the argument buffer is " + std::to_string(*size) +
                      " bytes but the kernel's parameters take " + std::to_string(need));
            return INVALID_VALUE;
        }
        std::memcpy(block.data(), buf, need);
    } else if (params && params[0]) {
        std::memcpy(block.data(), params[0], need);
    } else {
        violation(who + ": no kernel arguments");
        return INVALID_VALUE;
    }
    unsigned long long ptrs[64];
    int n = f->pointers(block.data(), ptrs, 64);
    std::vector<CUdeviceptr> uses;
    for (int i = 0; i < n && i < 64; ++i) {
        std::string why;
        int owner = 0;
        CUdeviceptr base = find_range(ptrs[i], 0, &why, &owner);
        if (!base) {
            violation(who + ": argument pointer " + why);
            return ILLEGAL_ADDRESS;
        }
        if (owner != t_current->device) {
            violation(who + ": argument pointer " + hex(ptrs[i]) + " is memory of device " + std::to_string(owner) +
                      ", launched on device " + std::to_string(t_current->device) + " (no peer access)");
            return ILLEGAL_ADDRESS;
        }
        uses.push_back(base);
    }
    if (inject(LAUNCH)) return LAUNCH_OUT_OF_RESOURCES;
    LaunchFn launch = f->launch;
    s->push(Work{[=] {
                     launch(gx, gy, gz, bx, by, bz, block.data());
                     return OK;
                 },
                 uses, who});
    return OK;
}

// ---- errors ----

static const char* error_name(CUresult e) {
    switch (e) {
    case OK: return "CUDA_SUCCESS";
    case INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
    case OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
    case NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
    case NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
    case INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
    case INVALID_IMAGE: return "CUDA_ERROR_INVALID_IMAGE";
    case INVALID_CONTEXT: return "CUDA_ERROR_INVALID_CONTEXT";
    case INVALID_HANDLE: return "CUDA_ERROR_INVALID_HANDLE";
    case ILLEGAL_STATE: return "CUDA_ERROR_ILLEGAL_STATE";
    case NOT_FOUND: return "CUDA_ERROR_NOT_FOUND";
    case ILLEGAL_ADDRESS: return "CUDA_ERROR_ILLEGAL_ADDRESS";
    case LAUNCH_OUT_OF_RESOURCES: return "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES";
    case NOT_SUPPORTED: return "CUDA_ERROR_NOT_SUPPORTED";
    default: return nullptr;
    }
}

EXPORT CUresult cuGetErrorName(CUresult e, const char** s) {
    if (!s) return INVALID_VALUE;
    *s = error_name(e);
    return *s ? OK : INVALID_VALUE;
}

EXPORT CUresult cuGetErrorString(CUresult e, const char** s) {
    if (!s) return INVALID_VALUE;
    *s = error_name(e);
    return *s ? OK : INVALID_VALUE;
}
