#include "framework_peer.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "weft/bench/timing.h"
#include "weft/dsl/error.h"

namespace weft::bench {

namespace {

// What every job shares: its arguments, loading inputs, and (after the job's own code, which
// defines NAME, step() and result()) the timing loop and the output files.
constexpr const char* kPrelude = R"PY(
import sys
import torch
job_dir = sys.argv[1]  # (a name no job script uses: attention's has a d of its own)
warmup, reps = int(sys.argv[2]), int(sys.argv[3])
hold_factor, min_hold, max_hold = float(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])  # 0: no hold
args = [int(x) for x in sys.argv[7:]]
if not torch.cuda.is_available():
    sys.exit("PyTorch has no CUDA device")
def load(name, dtype, *shape):
    with open(f"{job_dir}/{name}.bin", "rb") as f:
        return torch.frombuffer(bytearray(f.read()), dtype=dtype).reshape(*shape).cuda()
)PY";

// The hold before each timed step follows timing.h's rule (hold_for, its constants passed as
// arguments), spun by torch.cuda._sleep in GPU clock cycles: at 2 GHz or less it lasts at least
// that long, and hold_s records the length asked for.
constexpr const char* kEpilogue = R"PY(
import time
enqueue = 0.0
for _ in range(warmup):
    torch.cuda.synchronize()
    began = time.perf_counter()
    step()
    enqueue = time.perf_counter() - began
torch.cuda.synchronize()
hold_s = min(max(hold_factor * enqueue, min_hold), max_hold) if hold_factor > 0 else 0.0
outlasted = 0
with open(f"{job_dir}/times.txt", "w") as t:
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        began = time.perf_counter()
        if hold_s:
            torch.cuda._sleep(int(hold_s * 2e9))
        start.record()
        step()
        enqueued = time.perf_counter() - began
        end.record()
        if hold_s and enqueued > hold_s:
            outlasted += 1
        end.synchronize()
        t.write(f"{start.elapsed_time(end) / 1e3!r}\n")
with open(f"{job_dir}/hold.txt", "w") as h:
    h.write(f"{hold_s!r} {outlasted}\n")
result().float().cpu().numpy().tofile(f"{job_dir}/out.bin")
with open(f"{job_dir}/name.txt", "w") as f:
    # (a conditional, not globals().get: its f-string default would be evaluated, and fail, in
    # scripts that set FULL_NAME and no NAME)
    f.write(FULL_NAME if "FULL_NAME" in globals() else f"PyTorch {torch.__version__} {NAME}")
)PY";

// torch.matmul in bf16: args m n k; inputs a (m x k), b (k x n).
constexpr const char* kTorchMatmul = R"PY(
m, n, k, transposed = args
a = load("a", torch.bfloat16, m, k)
b = load("b", torch.bfloat16, n, k).t() if transposed else load("b", torch.bfloat16, k, n)
c = torch.empty(m, n, dtype=torch.bfloat16, device="cuda")
NAME = "torch.matmul"
def step():
    torch.matmul(a, b, out=c)
def result():
    return c
)PY";

// C = A * B^T in bf16 (fp32 accumulation) by a Triton kernel written here: args m n k; inputs a
// (m x k), b (n x k). One program per 128 x 256 block of C in L2-grouped order (8 block rows a
// group, hopper_gemm's order), K in steps of 64 through tl.dot, 3 pipeline stages, 8 warps.
constexpr const char* kTritonMatmul = R"PY(
import triton
import triton.language as tl
m, n, k = args
a = load("a", torch.bfloat16, m, k)
b = load("b", torch.bfloat16, n, k)
c = torch.empty(m, n, dtype=torch.bfloat16, device="cuda")
BM, BN, BK, GROUP = 128, 256, 64, 8

@triton.jit
def matmul_abt(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
    pid = tl.program_id(0)
    blocks_m, blocks_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
    per_group = GROUP * blocks_n
    first_row = (pid // per_group) * GROUP
    rows = tl.minimum(blocks_m - first_row, GROUP)
    block_m = first_row + (pid % per_group) % rows
    block_n = (pid % per_group) // rows
    rm = block_m * BM + tl.arange(0, BM)
    rn = block_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + rk
        a_tile = tl.load(a_ptr + rm[:, None] * K + ks[None, :], mask=(rm[:, None] < M) & (ks[None, :] < K), other=0.0)
        bt_tile = tl.load(b_ptr + rn[None, :] * K + ks[:, None], mask=(rn[None, :] < N) & (ks[:, None] < K), other=0.0)
        acc = tl.dot(a_tile, bt_tile, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.bfloat16), mask=(rm[:, None] < M) & (rn[None, :] < N))

grid = (triton.cdiv(m, BM) * triton.cdiv(n, BN),)
FULL_NAME = f"Triton {triton.__version__} tl.dot matmul (128x256x64 blocks, 3 stages, 8 warps)"
def step():
    matmul_abt[grid](a, b, c, m, n, k, BM=BM, BN=BN, BK=BK, GROUP=GROUP, num_warps=8, num_stages=3)
def result():
    return c
)PY";

void write_bytes(const std::filesystem::path& path, const void* data, size_t size) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) throw Error("framework peer: cannot write " + path.string());
}

// A double as Python reads it back exactly (17 significant digits).
std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

FrameworkRun run_framework(const FrameworkJob& job, const Options& o) {
  if (!o.framework_peers) throw Error("framework peers not run (--no-framework-peers)");
  std::string dir_template = (std::filesystem::temp_directory_path() / "weft-bench-XXXXXX").string();
  if (!mkdtemp(dir_template.data())) throw Error("framework peer: cannot make a temporary directory");
  const std::filesystem::path dir = dir_template;
  struct Cleanup {
    std::filesystem::path dir;
    ~Cleanup() { std::filesystem::remove_all(dir); }
  } cleanup{dir};
  const std::string script = std::string(kPrelude) + job.script + kEpilogue;
  write_bytes(dir / "peer.py", script.data(), script.size());
  for (const auto& [name, bytes] : job.inputs) write_bytes(dir / (name + ".bin"), bytes.data(), bytes.size());
  std::string command = "python3 '" + (dir / "peer.py").string() + "' '" + dir.string() + "' " + std::to_string(o.warmup) + " " +
                        std::to_string(o.repetitions) + " " + (o.hold ? number_text(kHoldFactor) : "0") + " " + number_text(kMinHold) + " " +
                        number_text(kMaxHold);
  for (int64_t a : job.args) command += " " + std::to_string(a);
  command += " > '" + (dir / "log.txt").string() + "' 2>&1";
  if (std::system(command.c_str()) != 0) {
    std::string log = read_text(dir / "log.txt");
    if (log.size() > 400) log = "..." + log.substr(log.size() - 400);
    while (!log.empty() && log.back() == '\n') log.pop_back();
    throw Error("PyTorch peer: python3 failed: " + log);
  }
  FrameworkRun run;
  run.name = read_text(dir / "name.txt");
  std::istringstream times(read_text(dir / "times.txt"));
  for (double s; times >> s;) run.timing.seconds.push_back(s);
  std::istringstream(read_text(dir / "hold.txt")) >> run.timing.hold_s >> run.timing.holds_outlasted;
  std::ifstream out(dir / "out.bin", std::ios::binary);
  std::vector<float> values(job.outputs);
  out.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(values.size() * sizeof(float)));
  if (!out || run.timing.seconds.size() != static_cast<size_t>(o.repetitions)) throw Error("PyTorch peer: incomplete results in " + dir.string());
  run.output.assign(values.begin(), values.end());
  return run;
}

FrameworkRun torch_matmul(int64_t m, int64_t n, int64_t k, const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, const Options& o,
                          bool b_transposed) {
  return run_framework({kTorchMatmul, {{"a", a}, {"b", b}}, {m, n, k, b_transposed ? 1 : 0}, static_cast<size_t>(m * n)}, o);
}

FrameworkRun triton_matmul(int64_t m, int64_t n, int64_t k, const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, const Options& o) {
  return run_framework({kTritonMatmul, {{"a", a}, {"b", b}}, {m, n, k}, static_cast<size_t>(m * n)}, o);
}

}  // namespace weft::bench
