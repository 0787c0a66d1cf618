// The CPU-backed stand-in for NVRTC (built as `libnvrtc.so.13`, loaded the way the real one
// is). Test-only.
//
// "Compiling" a program builds its CUDA C with the host C++ compiler under the shim header
// (kernels/cuda-testing/include/shim.h, through kernel.h) into a shared library, with a wrapper per
// `__global__` kernel that the stand-in driver calls (see standin.h); the "cubin" or "PTX"
// is a short text naming that library. Libraries are cached by a hash of what built them.
// `TOPS_STANDIN_KEEP_SOURCES=1` keeps each generated .cpp next to its library (debugging).
// A program that does not build is NVRTC_ERROR_COMPILATION with the compiler's messages as
// the log, as a real NVRTC would fail on it.
//
// Prebuilt programs (a test control, `tops_standin_prebuild`): a test process can have
// many kernels built in one program (one compiler run instead of one per kernel) and name,
// for each kernel, the one-kernel program the backend will compile at its first launch.
// A later compile of exactly that program text, with the same include directories, loads
// the shared library instead of compiling again (an "alias" file in the cache).
//
// Headers are parsed once: kernel.h (shim + CUDA half types) and kernel_prelude.h (the same
// and prelude.cuh) are precompiled when the stand-in is built; a program that starts with
// exactly the text of prelude.cuh (every generated one) is compiled after kernel_prelude.h
// with that prefix cut, any other after kernel.h.
//
// Baked in when the stand-in is built (-D): TOPS_STANDIN_CXX (the compiler),
// TOPS_STANDIN_INCLUDE (directories of the precompiled headers, kernel.h, shim.h and the
// CUDA headers, ':'-separated), TOPS_STANDIN_PRELUDE (prelude.cuh's path), TOPS_STANDIN_CACHE
// (where built kernels go), TOPS_STANDIN_FLAGS.

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "standin.h"

#define EXPORT extern "C" __attribute__((visibility("default")))

typedef int nvrtcResult;
enum : nvrtcResult {
    NVRTC_SUCCESS = 0,
    NVRTC_OUT_OF_MEMORY = 1,
    NVRTC_INVALID_INPUT = 3,
    NVRTC_INVALID_PROGRAM = 4,
    NVRTC_INVALID_OPTION = 5,
    NVRTC_COMPILATION = 6,
    NVRTC_INTERNAL_ERROR = 11,
};

namespace {

struct Program {
    std::string source, name, log, image;
    bool compiled = false;
};

/// 64-bit FNV-1a.
unsigned long long fnv(const std::string& s, unsigned long long h = 0xcbf29ce484222325ULL) {
    for (unsigned char c : s) {
        h ^= c;
        h *= 0x100000001b3ULL;
    }
    return h;
}

/// One `__global__` kernel of a program: its name and its single parameter's type.
struct Kernel {
    std::string name, args;
    bool threaded;
};

bool ident(char c) { return std::isalnum((unsigned char)c) || c == '_'; }

size_t skip_space(const std::string& s, size_t i) {
    while (i < s.size() && std::isspace((unsigned char)s[i])) ++i;
    return i;
}

std::string word(const std::string& s, size_t& i) {
    i = skip_space(s, i);
    size_t b = i;
    while (i < s.size() && ident(s[i])) ++i;
    return s.substr(b, i - b);
}

/// Whether CUDA C text has block barriers or warp shuffles.
bool synchronises(const std::string& text) {
    return text.find("__syncthreads") != std::string::npos || text.find("__shfl") != std::string::npos;
}

/// The kernels: `__global__ void [__launch_bounds__(..)] NAME(TYPE param)`. A kernel runs
/// its block's threads as fibers when it may synchronise: its own text does, or the device
/// code in front of the kernels (the headers and functions it can call: a program holds
/// one kernel and what it needs, so this is exact for the backend's programs), or it is a
/// reduction or transpose block.
std::vector<Kernel> kernels_of(const std::string& src, std::string* err) {
    std::vector<Kernel> out;
    const std::string device_code = src.substr(0, src.find("__global__"));
    for (size_t at = src.find("__global__"); at != std::string::npos; at = src.find("__global__", at + 1)) {
        size_t i = at + std::strlen("__global__");
        if (word(src, i) != "void") continue; // the macro's own mention, or a comment
        std::string name = word(src, i);
        if (name == "__launch_bounds__") {
            i = src.find(')', i);
            if (i == std::string::npos) break;
            ++i;
            name = word(src, i);
        }
        i = skip_space(src, i);
        if (name.empty() || i >= src.size() || src[i] != '(') continue;
        ++i;
        std::string type = word(src, i);
        if (type == "const") type = word(src, i);
        size_t close = src.find(')', i);
        std::string rest = src.substr(i, close == std::string::npos ? 0 : close - i);
        if (type.empty() || rest.find(',') != std::string::npos) {
            *err = "stand-in: kernel " + name + " must take exactly one argument block by value";
            return {};
        }
        size_t next = src.find("__global__", at + 1);
        std::string body = src.substr(at, next == std::string::npos ? std::string::npos : next - at);
        bool threaded = type == "tops_reduce_args" || type == "tops_fused_reduce_args" || type == "tops_transpose_args" ||
                        synchronises(body) || synchronises(device_code);
        out.push_back(Kernel{name, type, threaded});
    }
    return out;
}

std::string wrappers(const std::vector<Kernel>& ks) {
    std::ostringstream o;
    for (const Kernel& k : ks) {
        o << "extern \"C\" __attribute__((visibility(\"default\"))) void " TOPS_STANDIN_LAUNCH << k.name
          << "(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, const void* a) {\n"
          << "    tops_shim_launch(dim3(gx, gy, gz), dim3(bx, by, bz), " << (k.threaded ? "true" : "false")
          << ", [&] { " << k.name << "(*(const " << k.args << "*)a); });\n}\n"
          << "extern \"C\" __attribute__((visibility(\"default\"))) unsigned long long " TOPS_STANDIN_ARGSIZE << k.name
          << "() { return sizeof(" << k.args << "); }\n"
          << "extern \"C\" __attribute__((visibility(\"default\"))) int " TOPS_STANDIN_POINTERS << k.name
          << "(const void* a, unsigned long long* out, int cap) { return tops_standin_pointers(*(const " << k.args
          << "*)a, out, cap); }\n";
    }
    return o.str();
}

bool file_exists(const std::string& p) { return access(p.c_str(), R_OK) == 0; }

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::string cur;
    std::istringstream in(s);
    while (std::getline(in, cur, sep))
        if (!cur.empty()) out.push_back(cur);
    return out;
}

/// Runs `argv` with stderr into `log`; true on exit status 0.
bool run(const std::vector<std::string>& argv, const std::string& log_path) {
    pid_t pid = fork();
    if (pid < 0) return false;
    if (pid == 0) {
        FILE* f = std::freopen(log_path.c_str(), "w", stderr);
        (void)f;
        std::vector<char*> args;
        for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        execvp(args[0], args.data());
        std::fprintf(stderr, "stand-in: cannot run %s\n", args[0]);
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return false;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::string read_file(const std::string& p) {
    std::ifstream in(p);
    std::stringstream b;
    b << in.rdbuf();
    return b.str();
}

/// The include directories of a compile: the stand-in's own, then those of `options`.
std::vector<std::string> includes_of(const std::vector<std::string>& options) {
    std::vector<std::string> includes = split(TOPS_STANDIN_INCLUDE, ':');
    for (const std::string& o : options) {
        if (o.rfind("-I", 0) == 0) includes.push_back(o.substr(2));
        else if (o.rfind("--include-path=", 0) == 0) includes.push_back(o.substr(15));
    }
    return includes;
}

/// The cache file that names the prebuilt library of a program `source` compiled with
/// `includes` (see the top of the file).
std::string alias_path(const std::string& source, const std::vector<std::string>& includes) {
    std::string text = source;
    for (const std::string& d : includes) text += "\x1f" + d;
    char key[32];
    std::snprintf(key, sizeof key, "%016llx", fnv(text));
    return std::string(TOPS_STANDIN_CACHE) + "/alias-" + key;
}

/// Writes `text` to `path` whole or not at all (a temporary file renamed).
bool write_atomically(const std::string& path, const std::string& text) {
    static std::atomic<unsigned long> writes{0};
    const std::string tmp = path + "-" + std::to_string(getpid()) + "-" + std::to_string(writes.fetch_add(1));
    {
        std::ofstream out(tmp);
        out << text;
        if (!out) return false;
    }
    if (std::rename(tmp.c_str(), path.c_str()) == 0) return true;
    std::remove(tmp.c_str());
    return false;
}

/// Compiles `p` with `options`. `wrap`, when given, lists the kernels to wrap with the
/// launch flags to use (a prebuilt program's kernels, each as its own program has it);
/// otherwise they are read from the source. `so_out` receives the library's path.
nvrtcResult compile(Program& p, const std::vector<std::string>& options, const std::vector<Kernel>* wrap = nullptr,
                    std::string* so_out = nullptr) {
    const std::vector<std::string> includes = includes_of(options);
    std::string arch;
    for (const std::string& o : options) {
        if (o.rfind("--gpu-architecture=", 0) == 0) arch = o.substr(19);
        else if (o.rfind("-arch=", 0) == 0) arch = o.substr(6);
    }
    if (!arch.empty() && arch.rfind("sm_", 0) != 0 && arch.rfind("compute_", 0) != 0) {
        p.log = "stand-in: unknown --gpu-architecture=" + arch;
        return NVRTC_INVALID_OPTION;
    }
    std::string err;
    std::vector<Kernel> ks = kernels_of(p.source, &err);
    if (!err.empty()) {
        p.log = err;
        return NVRTC_COMPILATION;
    }
    if (wrap) {
        ks = *wrap;
    } else {
        // a program built earlier as part of a prebuilt one
        const std::string alias = alias_path(p.source, includes);
        if (file_exists(alias)) {
            const std::string so = read_file(alias);
            if (!so.empty() && file_exists(so)) {
                p.image = std::string(TOPS_STANDIN_IMAGE_MAGIC) + so + "\n";
                p.image.push_back('\0');
                p.compiled = true;
                return NVRTC_SUCCESS;
            }
        }
    }
    static const std::string prelude = read_file(TOPS_STANDIN_PRELUDE);
    const std::string file = p.name.empty() ? std::string("program.cu") : p.name;
    std::string text;
    if (!prelude.empty() && p.source.compare(0, prelude.size(), prelude) == 0) {
        const long lines = (long)std::count(prelude.begin(), prelude.end(), '\n');
        text = "#include \"kernel_prelude.h\"\n#line " + std::to_string(lines + 1) + " \"" + file + "\"\n" +
               p.source.substr(prelude.size());
    } else {
        text = "#include \"kernel.h\"\n#line 1 \"" + file + "\"\n" + p.source;
    }
    text += "\n" + wrappers(ks);
    std::vector<std::string> argv = {TOPS_STANDIN_CXX};
    for (const std::string& f : split(TOPS_STANDIN_FLAGS, ' ')) argv.push_back(f);
    for (const std::string& d : includes) argv.push_back("-I" + d);
    std::string key_text = text;
    for (auto& a : argv) key_text += "\x1f" + a;
    char key[32];
    std::snprintf(key, sizeof key, "%016llx", fnv(key_text));
    const std::string dir = TOPS_STANDIN_CACHE;
    const std::string so = dir + "/k-" + key + ".so";
    if (!file_exists(so)) {
        // Unique per build, not just per process: threads of one process may build the same
        // program at once, and each must rename only a library it finished writing itself.
        static std::atomic<unsigned long> builds{0};
        const std::string tag =
            dir + "/k-" + key + "-" + std::to_string(getpid()) + "-" + std::to_string(builds.fetch_add(1));
        {
            std::ofstream out(tag + ".cpp");
            out << text;
            if (!out) {
                p.log = "stand-in: cannot write " + tag + ".cpp";
                return NVRTC_INTERNAL_ERROR;
            }
        }
        argv.insert(argv.end(), {"-shared", "-o", tag + ".so", tag + ".cpp"});
        bool ok = run(argv, tag + ".log");
        p.log = read_file(tag + ".log");
        if (!std::getenv("TOPS_STANDIN_KEEP_SOURCES")) std::remove((tag + ".cpp").c_str());
        std::remove((tag + ".log").c_str());
        if (!ok) {
            std::remove((tag + ".so").c_str());
            return NVRTC_COMPILATION;
        }
        if (std::rename((tag + ".so").c_str(), so.c_str()) != 0) {
            p.log += "stand-in: cannot rename the built kernel library to " + so;
            return NVRTC_INTERNAL_ERROR;
        }
    }
    p.image = std::string(TOPS_STANDIN_IMAGE_MAGIC) + so + "\n";
    p.image.push_back('\0');
    p.compiled = true;
    if (so_out) *so_out = so;
    return NVRTC_SUCCESS;
}

} // namespace

/// Test control (not NVRTC's API): builds `group`, a program of many kernels, as
/// nvrtcCompileProgram with `options` would, then records each of the `n_singles` programs
/// `singles` (one kernel each, with what it needs, as the backend compiles a kernel at its
/// first launch) as built by it. Each kernel is wrapped with the launch flags its own
/// program gives it. A single program with a kernel the group lacks, or with more than one,
/// is refused (NVRTC_INVALID_INPUT) before anything is built. On failure `log` (`log_cap`
/// bytes) receives the reason.
EXPORT nvrtcResult tops_standin_prebuild(const char* group, int n_options, const char* const* options, int n_singles,
                                         const char* const* singles, char* log, unsigned long long log_cap) {
    auto fail = [&](nvrtcResult r, const std::string& why) {
        if (log && log_cap > 0) {
            const size_t n = std::min<size_t>(why.size(), log_cap - 1);
            std::memcpy(log, why.data(), n);
            log[n] = '\0';
        }
        return r;
    };
    if (!group || n_options < 0 || (n_options > 0 && !options) || n_singles < 0 || (n_singles > 0 && !singles))
        return fail(NVRTC_INVALID_INPUT, "stand-in prebuild: null or negative arguments");
    std::string err;
    const std::vector<Kernel> in_group = kernels_of(group, &err);
    if (!err.empty()) return fail(NVRTC_COMPILATION, err);
    std::vector<Kernel> wrap;
    for (int i = 0; i < n_singles; ++i) {
        if (!singles[i]) return fail(NVRTC_INVALID_INPUT, "stand-in prebuild: a null program");
        const std::vector<Kernel> ks = kernels_of(singles[i], &err);
        if (!err.empty()) return fail(NVRTC_COMPILATION, err);
        if (ks.size() != 1) return fail(NVRTC_INVALID_INPUT, "stand-in prebuild: a single program has " + std::to_string(ks.size()) + " kernels");
        const bool found = std::any_of(in_group.begin(), in_group.end(), [&](const Kernel& k) { return k.name == ks[0].name; });
        if (!found) return fail(NVRTC_INVALID_INPUT, "stand-in prebuild: kernel " + ks[0].name + " is not in the group");
        wrap.push_back(ks[0]);
    }
    Program p{group, "prebuilt.cu", "", ""};
    const std::vector<std::string> opts(options, options + n_options);
    std::string so;
    const nvrtcResult r = compile(p, opts, &wrap, &so);
    if (r != NVRTC_SUCCESS) return fail(r, p.log);
    const std::vector<std::string> includes = includes_of(opts);
    for (int i = 0; i < n_singles; ++i) {
        if (!write_atomically(alias_path(singles[i], includes), so))
            return fail(NVRTC_INTERNAL_ERROR, "stand-in prebuild: cannot write an alias in " TOPS_STANDIN_CACHE);
    }
    return NVRTC_SUCCESS;
}

EXPORT nvrtcResult nvrtcVersion(int* major, int* minor) {
    if (!major || !minor) return NVRTC_INVALID_INPUT;
    *major = 13;
    *minor = 0;
    return NVRTC_SUCCESS;
}

EXPORT nvrtcResult nvrtcGetNumSupportedArchs(int* n) {
    if (!n) return NVRTC_INVALID_INPUT;
    *n = 1;
    return NVRTC_SUCCESS;
}

EXPORT nvrtcResult nvrtcGetSupportedArchs(int* archs) {
    if (!archs) return NVRTC_INVALID_INPUT;
    archs[0] = 90;
    return NVRTC_SUCCESS;
}

EXPORT nvrtcResult nvrtcCreateProgram(Program** prog, const char* src, const char* name, int num_headers,
                                      const char* const*, const char* const*) {
    if (!prog || !src) return NVRTC_INVALID_INPUT;
    if (num_headers != 0) return NVRTC_INVALID_INPUT; // the backend passes none
    *prog = new Program{src, name ? name : "", "", ""};
    return NVRTC_SUCCESS;
}

EXPORT nvrtcResult nvrtcDestroyProgram(Program** prog) {
    if (!prog || !*prog) return NVRTC_INVALID_PROGRAM;
    delete *prog;
    *prog = nullptr;
    return NVRTC_SUCCESS;
}

EXPORT nvrtcResult nvrtcCompileProgram(Program* prog, int n, const char* const* options) {
    if (!prog) return NVRTC_INVALID_PROGRAM;
    if (n < 0 || (n > 0 && !options)) return NVRTC_INVALID_INPUT;
    std::vector<std::string> opts(options, options + n);
    return compile(*prog, opts);
}

EXPORT nvrtcResult nvrtcGetProgramLogSize(Program* prog, size_t* size) {
    if (!prog) return NVRTC_INVALID_PROGRAM;
    if (!size) return NVRTC_INVALID_INPUT;
    *size = prog->log.size() + 1;
    return NVRTC_SUCCESS;
}

EXPORT nvrtcResult nvrtcGetProgramLog(Program* prog, char* log) {
    if (!prog) return NVRTC_INVALID_PROGRAM;
    if (!log) return NVRTC_INVALID_INPUT;
    std::memcpy(log, prog->log.c_str(), prog->log.size() + 1);
    return NVRTC_SUCCESS;
}

static nvrtcResult image_size(Program* prog, size_t* size) {
    if (!prog || !prog->compiled) return NVRTC_INVALID_PROGRAM;
    if (!size) return NVRTC_INVALID_INPUT;
    *size = prog->image.size();
    return NVRTC_SUCCESS;
}

static nvrtcResult image(Program* prog, char* out) {
    if (!prog || !prog->compiled) return NVRTC_INVALID_PROGRAM;
    if (!out) return NVRTC_INVALID_INPUT;
    std::memcpy(out, prog->image.data(), prog->image.size());
    return NVRTC_SUCCESS;
}

EXPORT nvrtcResult nvrtcGetPTXSize(Program* prog, size_t* size) { return image_size(prog, size); }
EXPORT nvrtcResult nvrtcGetPTX(Program* prog, char* out) { return image(prog, out); }
EXPORT nvrtcResult nvrtcGetCUBINSize(Program* prog, size_t* size) { return image_size(prog, size); }
EXPORT nvrtcResult nvrtcGetCUBIN(Program* prog, char* out) { return image(prog, out); }

EXPORT const char* nvrtcGetErrorString(nvrtcResult r) {
    switch (r) {
    case NVRTC_SUCCESS: return "NVRTC_SUCCESS";
    case NVRTC_OUT_OF_MEMORY: return "NVRTC_ERROR_OUT_OF_MEMORY";
    case NVRTC_INVALID_INPUT: return "NVRTC_ERROR_INVALID_INPUT";
    case NVRTC_INVALID_PROGRAM: return "NVRTC_ERROR_INVALID_PROGRAM";
    case NVRTC_INVALID_OPTION: return "NVRTC_ERROR_INVALID_OPTION";
    case NVRTC_COMPILATION: return "NVRTC_ERROR_COMPILATION";
    default: return "NVRTC_ERROR_INTERNAL_ERROR";
    }
}
