// The NCCL backend of Collectives (nccl_collectives.cpp), for collectives.cpp's choice.
#pragma once

#include <memory>
#include <string>

#include "weft/runtime/collectives.h"

namespace weft::rt {

// NCCL communicators over the mesh's GPUs, or nullptr with `why_not` saying why none can be had
// (a device that is not a CUDA GPU, libnccl not found, a communicator that failed to start).
std::unique_ptr<Collectives> open_nccl(Mesh& mesh, std::string& why_not);

}  // namespace weft::rt
