// The NCCL backend of Collectives: libnccl.so.2 loaded with dlopen (PyTorch's wheels ship it; so
// weft builds and runs where it is absent), one communicator per GPU of the mesh from
// ncclCommInitAll, each collective one NCCL group over all of them on the GPUs' legacy default
// streams (stream 0 of each primary context: the stream weft's CUDA devices launch and copy on,
// cuda_device.cpp, so a collective runs after the kernels issued before it).
#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include "collectives_backends.h"
#include "devices.h"
#include "weft/dsl/error.h"

namespace weft::rt {
namespace {

using ncclResult_t = int;
using ncclComm_t = void*;
constexpr int kNcclUint8 = 1, kNcclInt32 = 2, kNcclInt64 = 4, kNcclFloat16 = 6, kNcclFloat32 = 7, kNcclFloat64 = 8, kNcclBfloat16 = 9;  // ncclDataType_t
constexpr int kNcclSum = 0;                                                                                                          // ncclRedOp_t

struct NcclApi {
  ncclResult_t (*ncclGetVersion)(int*);
  ncclResult_t (*ncclCommInitAll)(ncclComm_t*, int, const int*);
  ncclResult_t (*ncclCommDestroy)(ncclComm_t);
  ncclResult_t (*ncclGroupStart)();
  ncclResult_t (*ncclGroupEnd)();
  ncclResult_t (*ncclSend)(const void*, size_t, int, int, ncclComm_t, void*);
  ncclResult_t (*ncclRecv)(void*, size_t, int, int, ncclComm_t, void*);
  ncclResult_t (*ncclAllGather)(const void*, void*, size_t, int, ncclComm_t, void*);
  ncclResult_t (*ncclReduceScatter)(const void*, void*, size_t, int, int, ncclComm_t, void*);
  const char* (*ncclGetErrorString)(ncclResult_t);
};

// The library's entry points, or nothing with `why_not` set. Loaded once.
const NcclApi* nccl_api(std::string& why_not) {
  static std::string failure;
  static const NcclApi* api = []() -> const NcclApi* {
    const char* named = std::getenv("WEFT_NCCL");
    if (named && !*named) named = nullptr;  // set but empty: as unset
    void* lib = named ? dlopen(named, RTLD_NOW | RTLD_LOCAL) : dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const std::string why = dlerror();  // the first file's failure, before the fallback's replaces it
      if (!named) lib = dlopen("libnccl.so", RTLD_NOW | RTLD_LOCAL);
      if (!lib) {
        failure = std::string(named ? named : "libnccl.so.2") + " did not load (" + why +
                  "); set WEFT_NCCL to the library's path (PyTorch's wheels ship it as nvidia/nccl/lib/libnccl.so.2)";
        return nullptr;
      }
    }
    static NcclApi a{};
    bool complete = true;
    auto resolve = [&](const char* name, auto& fn) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (!fn && complete) failure = std::string("the NCCL library lacks ") + name;
      complete = complete && fn;
    };
    resolve("ncclGetVersion", a.ncclGetVersion);
    resolve("ncclCommInitAll", a.ncclCommInitAll);
    resolve("ncclCommDestroy", a.ncclCommDestroy);
    resolve("ncclGroupStart", a.ncclGroupStart);
    resolve("ncclGroupEnd", a.ncclGroupEnd);
    resolve("ncclSend", a.ncclSend);
    resolve("ncclRecv", a.ncclRecv);
    resolve("ncclAllGather", a.ncclAllGather);
    resolve("ncclReduceScatter", a.ncclReduceScatter);
    resolve("ncclGetErrorString", a.ncclGetErrorString);
    return complete ? &a : nullptr;
  }();
  if (!api) why_not = failure;
  return api;
}

class NcclCollectives : public Collectives {
 public:
  NcclCollectives(Mesh& mesh, const NcclApi& api, const std::vector<int>& ordinals) : Collectives(mesh), api_(api) {
    int version = 0;
    check(api_.ncclGetVersion(&version), "reading its version");  // (before the communicators: nothing to free if it fails)
    comms_.resize(ordinals.size());
    check(api_.ncclCommInitAll(comms_.data(), static_cast<int>(ordinals.size()), ordinals.data()), "creating the communicators");
    version_ = std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." + std::to_string(version % 100);
  }
  ~NcclCollectives() override {
    for (ncclComm_t c : comms_)
      if (c) api_.ncclCommDestroy(c);
  }
  NcclCollectives(const NcclCollectives&) = delete;
  NcclCollectives& operator=(const NcclCollectives&) = delete;

  std::string backend() const override { return "nccl " + version_ + " over " + std::to_string(comms_.size()) + " GPUs"; }

 protected:
  void move_all_to_all(std::span<const DeviceArray> send, std::span<const DeviceArray> recv, const std::vector<std::vector<size_t>>& bytes) override {
    const size_t P = comms_.size();
    group("all_to_all", [&] {
      for (size_t p = 0; p < P; ++p) {
        size_t sent = 0, received = 0;
        for (size_t q = 0; q < P; ++q) {
          if (bytes[p][q]) check(api_.ncclSend(at(send[p], sent), bytes[p][q], kNcclUint8, static_cast<int>(q), comms_[p], nullptr), "all_to_all's send");
          if (bytes[q][p]) check(api_.ncclRecv(at(recv[p], received), bytes[q][p], kNcclUint8, static_cast<int>(q), comms_[p], nullptr), "all_to_all's receive");
          sent += bytes[p][q];
          received += bytes[q][p];
        }
      }
    });
  }
  void move_all_gather(std::span<const DeviceArray> send, std::span<const DeviceArray> recv, size_t bytes) override {
    group("all_gather", [&] {
      for (size_t p = 0; p < comms_.size(); ++p)
        check(api_.ncclAllGather(at(send[p], 0), at(recv[p], 0), bytes, kNcclUint8, comms_[p], nullptr), "all_gather");
    });
  }
  void sum_scatter(std::span<const DeviceArray> send, std::span<const DeviceArray> recv, size_t elements) override {
    const int type = summed_type(send.front().dtype);
    group("reduce_scatter", [&] {
      for (size_t p = 0; p < comms_.size(); ++p)
        check(api_.ncclReduceScatter(at(send[p], 0), at(recv[p], 0), elements, type, kNcclSum, comms_[p], nullptr), "reduce_scatter");
    });
  }

 private:
  static void* at(const DeviceArray& a, size_t byte_offset) { return reinterpret_cast<void*>(a.buffer.address + byte_offset); }
  static int summed_type(DType d) {
    if (d == dtypes::float32) return kNcclFloat32;
    if (d == dtypes::float64) return kNcclFloat64;
    if (d == dtypes::int32) return kNcclInt32;
    if (d == dtypes::int64) return kNcclInt64;
    if (d == dtypes::bfloat16) return kNcclBfloat16;
    if (d == dtypes::float16) return kNcclFloat16;
    throw Error("collectives: reduce_scatter: NCCL sums float32, float64, int32, int64, bfloat16 and float16, not " + d.name());
  }
  void check(ncclResult_t r, const std::string& what) const {
    if (r != 0) throw Error("collectives: NCCL: " + what + ": " + api_.ncclGetErrorString(r));
  }
  // One NCCL group: every GPU's part of the collective, issued from this thread.
  template <class F>
  void group(const std::string& op, F&& body) const {
    check(api_.ncclGroupStart(), op + " (group start)");
    try {
      body();
    } catch (...) {
      api_.ncclGroupEnd();
      throw;
    }
    check(api_.ncclGroupEnd(), op);
  }

  const NcclApi& api_;
  std::vector<ncclComm_t> comms_;
  std::string version_;
};

}  // namespace

std::unique_ptr<Collectives> open_nccl(Mesh& mesh, std::string& why_not) {
  std::vector<int> ordinals;
  for (size_t p = 0; p < mesh.size(); ++p) {
    const std::optional<int> ordinal = cuda_ordinal(mesh.device(p));
    if (!ordinal) {
      why_not = "device " + mesh.device(p).name() + " is not a CUDA GPU";
      return nullptr;
    }
    ordinals.push_back(*ordinal);
  }
  const NcclApi* api = nccl_api(why_not);
  if (!api) return nullptr;
  try {
    return std::make_unique<NcclCollectives>(mesh, *api, ordinals);
  } catch (const Error& e) {
    why_not = e.what();
    return nullptr;
  }
}

}  // namespace weft::rt
