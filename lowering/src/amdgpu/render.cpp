// The LLVM IR renderer for AMDGPU: a lowered kernel's linear program to an LLVM module, built
// with LLVM's C++ API (IRBuilder), then optimized and compiled in-process (target.h).
//
// GLOBAL buffers are kernel arguments in address space 1, LOCAL buffers workgroup globals in
// address space 3 (LDS), REG buffers allocas in address space 5 that SROA turns into registers.
// Loops are canonical (header with a phi, latch, exit); WMMA maps to the target's MFMA
// intrinsics; a barrier is a release fence, s_barrier and an acquire fence at workgroup scope.
#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>
#include <map>

#include <llvm/IR/Constants.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/Support/Error.h>
#include <llvm/IR/IntrinsicsAMDGPU.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>

#include "amdgpu/target.h"
#include "amdgpu/waitcnt.h"
#include "passes/graph_utils.h"
#include "weft/dsl/print.h"
#include "weft/lowering/amdgpu_codegen.h"
#include "weft/lowering/fp8_casts.h"
#include "weft/dsl/builder.h"
#include "weft/lowering/symbolic.h"

namespace weft::amdgpu {
namespace {

using lower::LinearOp;

[[noreturn]] void unsupported(const UOp& u, const std::string& why) {
  throw Error("AMDGPU renderer: " + std::string(op_name(u.op())) + " " + u.dtype().name() + " (" + expr_string(u, 120) + "): " + why);
}

struct Loop {
  llvm::PHINode* phi;
  llvm::BasicBlock* header;
  llvm::BasicBlock* exit;
};

// How an MFMA intrinsic types its A and B operands.
enum class MfmaOperands {
  Native,      // vectors of the input type
  Bf16AsI16,   // the older bf16 intrinsics take the bits as i16 vectors
  Fp8AsI64,    // eight fp8 bytes packed in an i64
  F8F6F4AsI32  // gfx950's f8f6f4 (the scaled intrinsic at scale 1): 32 bytes as <8 x i32>, format codes
};

// One MFMA instruction and how its operands are typed.
struct Mfma {
  llvm::Intrinsic::ID id;
  MfmaOperands operands = MfmaOperands::Native;
};

std::optional<Mfma> find_mfma(const WmmaArg& w, std::string_view mcpu) {
  const bool gfx950 = mcpu == "gfx950";
  using namespace llvm;
  if (w.threads != 64 || w.accum != dtypes::float32) return std::nullopt;
  auto shape = [&](int64_t m, int64_t n, int64_t k) { return w.m == m && w.n == n && w.k == k; };
  if (w.input == dtypes::float16) {
    if (shape(16, 16, 16)) return Mfma{Intrinsic::amdgcn_mfma_f32_16x16x16f16};
    if (shape(32, 32, 8)) return Mfma{Intrinsic::amdgcn_mfma_f32_32x32x8f16};
    if (gfx950 && shape(16, 16, 32)) return Mfma{Intrinsic::amdgcn_mfma_f32_16x16x32_f16};
    if (gfx950 && shape(32, 32, 16)) return Mfma{Intrinsic::amdgcn_mfma_f32_32x32x16_f16};
  }
  if (w.input == dtypes::bfloat16) {
    if (shape(16, 16, 16)) return Mfma{Intrinsic::amdgcn_mfma_f32_16x16x16bf16_1k, MfmaOperands::Bf16AsI16};
    if (shape(32, 32, 8)) return Mfma{Intrinsic::amdgcn_mfma_f32_32x32x8bf16_1k, MfmaOperands::Bf16AsI16};
    if (gfx950 && shape(16, 16, 32)) return Mfma{Intrinsic::amdgcn_mfma_f32_16x16x32_bf16};
    if (gfx950 && shape(32, 32, 16)) return Mfma{Intrinsic::amdgcn_mfma_f32_32x32x16_bf16};
  }
  const bool fp8 = gfx950 ? w.input == dtypes::fp8e4m3 : w.input == dtypes::fp8e4m3fnuz;
  if (fp8) {
    if (shape(16, 16, 32)) return Mfma{Intrinsic::amdgcn_mfma_f32_16x16x32_fp8_fp8, MfmaOperands::Fp8AsI64};
    if (shape(32, 32, 16)) return Mfma{Intrinsic::amdgcn_mfma_f32_32x32x16_fp8_fp8, MfmaOperands::Fp8AsI64};
    if (gfx950 && shape(16, 16, 128)) return Mfma{Intrinsic::amdgcn_mfma_scale_f32_16x16x128_f8f6f4, MfmaOperands::F8F6F4AsI32};
    if (gfx950 && shape(32, 32, 64)) return Mfma{Intrinsic::amdgcn_mfma_scale_f32_32x32x64_f8f6f4, MfmaOperands::F8F6F4AsI32};
  }
  if (w.input == dtypes::float32) {
    if (shape(16, 16, 4)) return Mfma{Intrinsic::amdgcn_mfma_f32_16x16x4f32};
    if (shape(32, 32, 2)) return Mfma{Intrinsic::amdgcn_mfma_f32_32x32x2f32};
  }
  return std::nullopt;
}

class Renderer {
 public:
  Renderer(const lower::LoweredKernel& k, std::string_view mcpu, llvm::LLVMContext& ctx)
      : kernel_(k), mcpu_(mcpu), ctx_(ctx), module_(std::make_unique<llvm::Module>(k.name, ctx)), b_(ctx) {}

  std::unique_ptr<llvm::Module> run() {
    declare_function();
    declare_buffers();
    for (const LinearOp& step : kernel_.program) {
      switch (step.kind) {
        case LinearOp::Kind::LoopBegin: begin_loop(step.op); break;
        case LinearOp::Kind::LoopEnd: end_loop(); break;
        case LinearOp::Kind::Value: values_[step.op.node()] = value(step.op); break;
        case LinearOp::Kind::Effect: effect(step.op); break;
        case LinearOp::Kind::BranchBegin:
        case LinearOp::Kind::BranchEnd:
          throw Error("AMDGPU renderer: WHEN " + expr_string(step.op, 80) +
                      " is a region kept as one branch (it holds Hopper statements, NVIDIA sm_90a only)");
      }
    }
    b_.CreateRetVoid();
    return std::move(module_);
  }

 private:
  llvm::Type* type(DType dt, const UOp* at = nullptr) {
    llvm::Type* t = nullptr;
    switch (dt.scalar) {
      case Scalar::Bool: t = b_.getInt1Ty(); break;
      case Scalar::Int8: case Scalar::UInt8: case Scalar::Fp8E4M3: case Scalar::Fp8E5M2:
      case Scalar::Fp8E4M3Fnuz: case Scalar::Fp8E5M2Fnuz: t = b_.getInt8Ty(); break;
      case Scalar::Int16: case Scalar::UInt16: t = b_.getInt16Ty(); break;
      case Scalar::Int32: case Scalar::UInt32: t = b_.getInt32Ty(); break;
      case Scalar::Int64: case Scalar::UInt64: case Scalar::Index: t = b_.getInt64Ty(); break;
      case Scalar::Float16: t = b_.getHalfTy(); break;
      case Scalar::BFloat16: t = b_.getBFloatTy(); break;
      case Scalar::Float32: t = b_.getFloatTy(); break;
      case Scalar::Float64: t = b_.getDoubleTy(); break;
      case Scalar::Void: t = b_.getVoidTy(); break;
    }
    if (dt.scalar == Scalar::Void && at) unsupported(*at, "a void value");
    return dt.is_vector() ? llvm::FixedVectorType::get(t, dt.lanes) : t;
  }

  void declare_function() {
    // Hopper's statements (and the tensor maps of TMA loads) have no AMD form: named up front.
    for (const lower::LinearOp& s : kernel_.program)
      if (opsets::hopper.contains(s.statement().op())) unsupported(s.statement(), "a Hopper instruction (NVIDIA sm_90a only); AMD targets have no form for it");
    if (kernel_.cluster > 1)
      throw Error("AMDGPU renderer: kernel " + kernel_.name + " runs in thread-block clusters of " + std::to_string(kernel_.cluster) +
                  " workgroups (NVIDIA sm_90 only); AMD targets have no clusters");
    std::vector<llvm::Type*> params;
    for (const auto& p : kernel_.params)
      params.push_back(p.kind == lower::KernelParam::Kind::Buffer ? static_cast<llvm::Type*>(b_.getPtrTy(1)) : type(p.dtype));
    auto* fty = llvm::FunctionType::get(b_.getVoidTy(), params, false);
    fn_ = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, kernel_.name, module_.get());
    fn_->setCallingConv(llvm::CallingConv::AMDGPU_KERNEL);
    int64_t threads = 1;
    for (const UOp& d : kernel_.launch.block) threads *= static_cast<int64_t>(d.const_int());
    const std::string size = std::to_string(threads) + "," + std::to_string(threads);
    fn_->addFnAttr("amdgpu-flat-work-group-size", size);
    fn_->addFnAttr("uniform-work-group-size", "true");
    if (kernel_.min_workgroups_per_processor > 0) {
      // Waves of 64 lanes, 4 SIMDs a CU, at most 8 waves a SIMD (CDNA3): the fewest waves per SIMD
      // that hold that many workgroups on one CU.
      const int64_t waves = (threads + 63) / 64, per_simd = (kernel_.min_workgroups_per_processor * waves + 3) / 4;
      fn_->addFnAttr("amdgpu-waves-per-eu", std::to_string(std::min<int64_t>(per_simd, 8)));
    }
    for (size_t i = 0; i < kernel_.params.size(); ++i) {
      const auto& p = kernel_.params[i];
      llvm::Argument* a = fn_->getArg(static_cast<unsigned>(i));
      a->setName(p.name);
      if (p.kind == lower::KernelParam::Kind::Buffer) {
        a->addAttr(llvm::Attribute::NoAlias);
        buffers_[p.slot + kGlobalKey] = a;
      } else {
        values_[p.variable.node()] = a;
      }
    }
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", fn_));
  }

  static constexpr int64_t kGlobalKey = int64_t{1} << 40;  // GLOBAL slots apart from REG/LOCAL ones
  static int64_t key(const BufferArg& a) {
    return a.space == AddrSpace::GLOBAL ? a.slot + kGlobalKey : a.space == AddrSpace::LOCAL ? -1 - a.slot : a.slot;
  }

  void declare_buffers() {
    std::vector<UOp> seen;
    for (const UOp& u : toposort(kernel_.graph)) {
      if (u.op() != Op::PLACEHOLDER) continue;
      const auto& a = u.arg_as<BufferArg>();
      if (a.space == AddrSpace::GLOBAL || buffers_.count(key(a))) continue;
      uint64_t elements = 1;
      for (int64_t d : u.static_shape()) elements *= static_cast<uint64_t>(d);
      auto* array = llvm::ArrayType::get(type(u.dtype()), elements);
      if (a.space == AddrSpace::LOCAL) {
        auto* g = new llvm::GlobalVariable(*module_, array, false, llvm::GlobalValue::InternalLinkage, llvm::UndefValue::get(array),
                                           "lds" + std::to_string(a.slot), nullptr, llvm::GlobalValue::NotThreadLocal, 3);
        g->setAlignment(llvm::Align(16));
        buffers_[key(a)] = g;
      } else {
        auto* slot = b_.CreateAlloca(array, 5, nullptr, "reg" + std::to_string(a.slot));
        slot->setAlignment(llvm::Align(16));
        buffers_[key(a)] = slot;
      }
    }
  }

  llvm::Value* get(const UOp& u) {
    auto it = values_.find(u.node());
    // A value AFTER effects is the value: linearize wrote the effects before its uses.
    if (it == values_.end() && u.op() == Op::AFTER && u.src(0).op() != Op::PLACEHOLDER) return get(u.src(0));
    if (it == values_.end()) throw Error("AMDGPU renderer: internal: " + std::string(op_name(u.op())) + " used before it is defined");
    return it->second;
  }

  void begin_loop(const UOp& r) {
    llvm::Value* end = get(r.src(0));
    llvm::Type* t = type(r.dtype());
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* header = llvm::BasicBlock::Create(ctx_, "loop" + std::to_string(r.arg_as<RangeArg>().id), fn_);
    auto* body = llvm::BasicBlock::Create(ctx_, "body" + std::to_string(r.arg_as<RangeArg>().id), fn_);
    auto* exit = llvm::BasicBlock::Create(ctx_, "exit" + std::to_string(r.arg_as<RangeArg>().id), fn_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode* phi = b_.CreatePHI(t, 2, "r" + std::to_string(r.arg_as<RangeArg>().id));
    phi->addIncoming(llvm::ConstantInt::get(t, 0), pre);
    b_.CreateCondBr(b_.CreateICmpSLT(phi, b_.CreateSExtOrTrunc(end, t)), body, exit);
    b_.SetInsertPoint(body);
    values_[r.node()] = phi;
    loops_.push_back({phi, header, exit});
  }

  void end_loop() {
    Loop l = loops_.back();
    loops_.pop_back();
    llvm::Value* next = b_.CreateAdd(l.phi, llvm::ConstantInt::get(l.phi->getType(), 1), "", false, true);
    l.phi->addIncoming(next, b_.GetInsertBlock());
    b_.CreateBr(l.header);
    b_.SetInsertPoint(l.exit);
  }

  llvm::Value* buffer_pointer(const UOp& buffer) {
    UOp b = buffer;
    while (b.op() == Op::AFTER) b = b.src(0);
    if (b.op() != Op::PLACEHOLDER) unsupported(buffer, "an index into something other than a buffer");
    return buffers_.at(key(b.arg_as<BufferArg>()));
  }

  // The address an INDEX names; an index that may be invalid points at element 0 instead.
  llvm::Value* address(const UOp& index) {
    llvm::Value* i = get(index.src(1));
    if (index.src().size() > 2) i = b_.CreateSelect(get(index.src(2)), i, llvm::ConstantInt::get(i->getType(), 0));
    UOp root = index.src(0);
    while (root.op() == Op::AFTER) root = root.src(0);
    return b_.CreateGEP(type(root.dtype()), buffer_pointer(index.src(0)), i);
  }

  // A vector INDEX aligned to its whole vector says so, so that LLVM emits one wide access (one
  // ds_read_b128 for 16 bytes of LDS) instead of splitting it; anything else, one element.
  llvm::Align alignment(const UOp& index) {
    const DType d = index.dtype();
    return llvm::Align(static_cast<uint64_t>(lower::aligned_vector(index) ? d.itemsize() : d.element().itemsize()));
  }

  llvm::Value* value(const UOp& u) {
    switch (u.op()) {
      case Op::CONST: return constant(u);
      case Op::SPECIAL: return special(u);
      case Op::DEFINE_VAR: return get(u);
      case Op::INDEX: return address(u);
      case Op::LOAD: {
        if (is_transposed_read(u)) return transposed_read(u);
        if (is_matrix_read(u)) unsupported(u, "ldmatrix (a cross-lane shared-memory read) is NVIDIA's; AMDGPU has none");
        const UOp& idx = u.src(0);
        llvm::Value* v = b_.CreateAlignedLoad(type(u.dtype()), get(idx), alignment(idx));
        llvm::Value* fill = u.src().size() > 1 ? get(u.src(1)) : llvm::Constant::getNullValue(v->getType());
        if (idx.src().size() > 2) v = b_.CreateSelect(get(idx.src(2)), v, fill);
        return v;
      }
      case Op::SHUFFLE: return shuffle(u);
      case Op::BROADCAST: return broadcast(u);
      case Op::VOTE: return vote(u);
      case Op::ATOMIC: return guarded_atomic(u);
      case Op::CUSTOMI: return inline_asm(u);
      case Op::VECTORIZE: {
        llvm::Value* v = llvm::PoisonValue::get(type(u.dtype()));
        for (size_t i = 0; i < u.src().size(); ++i) v = b_.CreateInsertElement(v, get(u.src(i)), b_.getInt32(static_cast<uint32_t>(i)));
        return v;
      }
      case Op::GEP: return b_.CreateExtractElement(get(u.src(0)), b_.getInt32(static_cast<uint32_t>(u.arg_as<ShapeArg>().values[0])));
      case Op::WMMA: return wmma(u);
      case Op::CAST: return cast(u);
      case Op::BITCAST: return b_.CreateBitCast(get(u.src(0)), type(u.dtype()));
      default: break;
    }
    if (opsets::alu.contains(u.op())) return alu(u);
    unsupported(u, "no AMDGPU lowering for this op");
  }

  // gfx950's ds_read_b64_tr_b16, read as 4 x i16 (the intrinsic's integer form) and bitcast to
  // the load's 2-byte type.
  llvm::Value* transposed_read(const UOp& u) {
    if (mcpu_ != "gfx950") unsupported(u, "a transposing LDS read (ds_read_b64_tr_b16) is gfx950's; " + mcpu_ + " has none");
    llvm::Type* as_int = llvm::FixedVectorType::get(b_.getInt16Ty(), 4);
    llvm::Value* v = b_.CreateIntrinsic(llvm::Intrinsic::amdgcn_ds_read_tr16_b64, {as_int}, {get(u.src(0))});
    return b_.CreateBitCast(v, type(u.dtype()));
  }

  llvm::Value* constant(const UOp& u) {
    llvm::Type* t = type(u.dtype());
    if (u.dtype().is_float()) {
      // An fp8 constant is its pattern (constants are stored rounded: the encoding is exact).
      if (u.dtype().is_fp8()) return llvm::ConstantInt::get(t, fp8_pattern(u.dtype(), u.const_float()));
      return llvm::ConstantFP::get(t, u.const_float());
    }
    return llvm::ConstantInt::get(t, static_cast<uint64_t>(u.const_int()), u.dtype().is_signed());
  }

  llvm::Value* special(const UOp& u) {
    const std::string& name = u.arg_as<std::string>();
    const int dim = name.back() - '0';
    static const llvm::Intrinsic::ID group[] = {llvm::Intrinsic::amdgcn_workgroup_id_x, llvm::Intrinsic::amdgcn_workgroup_id_y,
                                                llvm::Intrinsic::amdgcn_workgroup_id_z};
    static const llvm::Intrinsic::ID item[] = {llvm::Intrinsic::amdgcn_workitem_id_x, llvm::Intrinsic::amdgcn_workitem_id_y,
                                               llvm::Intrinsic::amdgcn_workitem_id_z};
    llvm::Value* id = b_.CreateIntrinsic(name[0] == 'g' ? group[dim] : item[dim], llvm::ArrayRef<llvm::Type*>{}, llvm::ArrayRef<llvm::Value*>{});
    // A WARP coordinate is the same in every lane of a wave: say so, so that it lives in an SGPR.
    if (name[0] == 'w') id = b_.CreateIntrinsic(llvm::Intrinsic::amdgcn_readfirstlane, {id->getType()}, {id});
    return b_.CreateZExtOrTrunc(id, type(u.dtype()));
  }

  // ---- across lanes ----

  llvm::Value* lane_id() {
    llvm::Value* lo = b_.CreateIntrinsic(llvm::Intrinsic::amdgcn_mbcnt_lo, llvm::ArrayRef<llvm::Type*>{}, {b_.getInt32(~0u), b_.getInt32(0)});
    return b_.CreateIntrinsic(llvm::Intrinsic::amdgcn_mbcnt_hi, llvm::ArrayRef<llvm::Type*>{}, {b_.getInt32(~0u), lo});
  }

  // Applies a 32-bit cross-lane operation to a value of any scalar type, a dword at a time.
  llvm::Value* by_dwords(llvm::Value* v, const std::function<llvm::Value*(llvm::Value*)>& op) {
    llvm::Type* t = v->getType();
    const unsigned bits = t->isIntegerTy(1) ? 1 : static_cast<unsigned>(t->getPrimitiveSizeInBits().getFixedValue());
    llvm::Type* as_int = b_.getIntNTy(bits);
    llvm::Value* x = bits == 1 ? v : b_.CreateBitCast(v, as_int);
    llvm::Value* out = nullptr;
    if (bits <= 32) {
      out = b_.CreateTrunc(op(b_.CreateZExt(x, b_.getInt32Ty())), as_int);
    } else {
      llvm::Value* lo = op(b_.CreateTrunc(x, b_.getInt32Ty()));
      llvm::Value* hi = op(b_.CreateTrunc(b_.CreateLShr(x, 32), b_.getInt32Ty()));
      out = b_.CreateOr(b_.CreateZExt(lo, as_int), b_.CreateShl(b_.CreateZExt(hi, as_int), 32));
    }
    return bits == 1 ? out : b_.CreateBitCast(out, t);
  }

  void check_wave(const UOp& u, int64_t width) {
    if (width > 64) unsupported(u, "a group of " + std::to_string(width) + " lanes; CDNA waves have 64");
  }

  // ds_bpermute: every lane reads the value of the lane it names.
  llvm::Value* shuffle(const UOp& u) {
    const auto& a = u.arg_as<LaneArg>();
    check_wave(u, a.width);
    llvm::Value* lane = lane_id();
    llvm::Value* n = b_.CreateSExtOrTrunc(get(u.src(1)), b_.getInt32Ty());
    llvm::Value* in_group = b_.CreateAnd(lane, b_.getInt32(static_cast<uint32_t>(a.width - 1)));
    llvm::Value* from = nullptr;
    switch (a.op) {
      case LaneOp::Xor: from = b_.CreateXor(lane, n); break;
      case LaneOp::Up: from = b_.CreateSelect(b_.CreateICmpUGE(in_group, n), b_.CreateSub(lane, n), lane); break;
      case LaneOp::Down:
        from = b_.CreateSelect(b_.CreateICmpULT(b_.CreateAdd(in_group, n), b_.getInt32(static_cast<uint32_t>(a.width))), b_.CreateAdd(lane, n), lane);
        break;
      case LaneOp::Index:
        from = b_.CreateOr(b_.CreateAnd(lane, b_.getInt32(~static_cast<uint32_t>(a.width - 1))),
                           b_.CreateAnd(n, b_.getInt32(static_cast<uint32_t>(a.width - 1))));
        break;
      default: unsupported(u, "not a shuffle");
    }
    llvm::Value* address = b_.CreateShl(from, 2);
    return by_dwords(get(u.src(0)), [&](llvm::Value* w) {
      return b_.CreateIntrinsic(llvm::Intrinsic::amdgcn_ds_bpermute, llvm::ArrayRef<llvm::Type*>{}, {address, w});
    });
  }

  llvm::Value* broadcast(const UOp& u) {
    return by_dwords(get(u.src(0)), [&](llvm::Value* w) -> llvm::Value* {
      if (u.src().size() == 1) return b_.CreateIntrinsic(llvm::Intrinsic::amdgcn_readfirstlane, {w->getType()}, {w});
      llvm::Value* lane = b_.CreateSExtOrTrunc(get(u.src(1)), b_.getInt32Ty());
      return b_.CreateIntrinsic(llvm::Intrinsic::amdgcn_readlane, {w->getType()}, {w, lane});
    });
  }

  llvm::Value* vote(const UOp& u) {
    const auto& a = u.arg_as<LaneArg>();
    if (a.width != 64) unsupported(u, "a vote over " + std::to_string(a.width) + " lanes; CDNA waves have 64");
    auto ballot = [&](llvm::Value* p) { return b_.CreateIntrinsic(llvm::Intrinsic::amdgcn_ballot, {b_.getInt64Ty()}, {p}); };
    llvm::Value* mask = ballot(get(u.src(0)));
    switch (a.op) {
      case LaneOp::Ballot: return mask;
      case LaneOp::Any: return b_.CreateICmpNE(mask, b_.getInt64(0));
      case LaneOp::All: return b_.CreateICmpEQ(mask, ballot(b_.getTrue()));  // ballot(true): the active lanes
      default: unsupported(u, "not a vote");
    }
  }

  llvm::Value* cast(const UOp& u) {
    const DType from = u.src(0).dtype().element(), to = u.dtype().element();
    llvm::Value* x = get(u.src(0));
    llvm::Type* t = type(u.dtype());
    if (from.is_fp8() || to.is_fp8()) return fp8_cast(u);
    if (to.is_bool()) {
      if (from.is_float()) return b_.CreateFCmpUNE(x, llvm::Constant::getNullValue(x->getType()));
      return b_.CreateICmpNE(x, llvm::Constant::getNullValue(x->getType()));
    }
    if (from.is_float() && to.is_float()) return b_.CreateFPCast(x, t);
    if (from.is_float()) return to.is_unsigned() ? b_.CreateFPToUI(x, t) : b_.CreateFPToSI(x, t);
    if (to.is_float()) return from.is_signed() ? b_.CreateSIToFP(x, t) : b_.CreateUIToFP(x, t);
    return b_.CreateIntCast(x, t, from.is_signed());
  }

  static uint64_t fp8_pattern(DType fp8, double v) { return encode_float(*fp8.float_format(), v, Overflow::Saturate); }

  // fp8 conversions (lowering/fp8_casts.h): float32 <-> fp8 with the target's instructions
  // where it converts the format, in integer arithmetic where it does not and from float64;
  // every other fp8 cast through those.
  llvm::Value* fp8_cast(const UOp& u) {
    if (!lower::is_fp8_conversion(u)) return emit_expansion(u, lower::fp8_cast_through_float32(u));
    const DType fp8 = u.dtype().is_fp8() ? u.dtype() : u.src(0).dtype();
    if (u.src(0).dtype() == dtypes::float64 || !converts_fp8_in_hardware(fp8))
      return emit_expansion(u, lower::fp8_cast_in_software(u));
    return u.dtype().is_fp8() ? fp8_from_f32(get(u.src(0)), fp8) : fp8_to_f32(get(u.src(0)), fp8);
  }

  // The v_cvt_*_fp8/bf8 instructions convert the fnuz formats on gfx942 (CDNA3) and the OCP
  // formats on gfx950 (CDNA4).
  bool converts_fp8_in_hardware(DType fp8) const {
    const bool fnuz = float_format_info(*fp8.float_format()).fnuz;
    return mcpu_ == "gfx950" ? !fnuz : mcpu_ == "gfx942" && fnuz;
  }

  // v_cvt_pk_fp8_f32 / v_cvt_pk_bf8_f32 round to nearest even but do not saturate (an overflow
  // becomes inf or NaN, and LLVM 22 takes no clamp bit for them on gfx942/gfx950): the input is
  // clamped to the largest finite value first (exact: a larger magnitude rounds to it or
  // beyond), and a NaN input gives the canonical NaN whatever the instruction makes of it.
  llvm::Value* fp8_from_f32(llvm::Value* x, DType fp8) {
    const FloatFormatInfo& f = float_format_info(*fp8.float_format());
    llvm::Type* f32 = b_.getFloatTy();
    llvm::Value* low = b_.CreateIntrinsic(llvm::Intrinsic::maxnum, {f32}, {x, llvm::ConstantFP::get(f32, -f.max_finite)});
    llvm::Value* clamped = b_.CreateIntrinsic(llvm::Intrinsic::minnum, {f32}, {low, llvm::ConstantFP::get(f32, f.max_finite)});
    const auto id = f.mantissa_bits == 3 ? llvm::Intrinsic::amdgcn_cvt_pk_fp8_f32 : llvm::Intrinsic::amdgcn_cvt_pk_bf8_f32;
    llvm::Value* packed = b_.CreateIntrinsic(id, llvm::ArrayRef<llvm::Type*>{}, {clamped, clamped, b_.getInt32(0), b_.getFalse()});
    llvm::Value* bits = b_.CreateTrunc(packed, b_.getInt8Ty());
    const double nan = std::numeric_limits<double>::quiet_NaN();
    llvm::Value* negative = b_.CreateICmpSLT(b_.CreateBitCast(x, b_.getInt32Ty()), b_.getInt32(0));
    llvm::Value* nan_bits = b_.CreateSelect(negative, b_.getInt8(static_cast<uint8_t>(fp8_pattern(fp8, -nan))),
                                            b_.getInt8(static_cast<uint8_t>(fp8_pattern(fp8, nan))));
    return b_.CreateSelect(b_.CreateFCmpUNO(x, x), nan_bits, bits);
  }

  // v_cvt_f32_fp8 / v_cvt_f32_bf8 (byte 0): exact.
  llvm::Value* fp8_to_f32(llvm::Value* q, DType fp8) {
    const auto id = float_format_info(*fp8.float_format()).mantissa_bits == 3 ? llvm::Intrinsic::amdgcn_cvt_f32_fp8
                                                                              : llvm::Intrinsic::amdgcn_cvt_f32_bf8;
    return b_.CreateIntrinsic(id, llvm::ArrayRef<llvm::Type*>{}, {b_.CreateZExt(q, b_.getInt32Ty()), b_.getInt32(0)});
  }

  // Emits `expansion` (a graph equal to `u` over u's source, which is emitted already) and
  // gives its value. Its nodes are emitted for this use only: the values of nodes it shares
  // with the rest of the program are put back afterwards, so no later use, maybe in another
  // block, refers to what was emitted here.
  llvm::Value* emit_expansion(const UOp& u, const UOp& expansion) {
    std::vector<std::pair<const Node*, llvm::Value*>> saved;
    for (const UOp& n : lower::expansion_order(expansion, u.src(0))) {
      auto it = values_.find(n.node());
      saved.emplace_back(n.node(), it == values_.end() ? nullptr : it->second);
      values_[n.node()] = value(n);
    }
    llvm::Value* result = get(expansion);
    for (auto it = saved.rbegin(); it != saved.rend(); ++it) {
      if (it->second) values_[it->first] = it->second;
      else values_.erase(it->first);
    }
    return result;
  }

  llvm::Value* alu(const UOp& u) {
    using llvm::Intrinsic::ID;
    std::vector<llvm::Value*> s;
    for (const UOp& x : u.src()) s.push_back(get(x));
    const DType dt = u.src(u.op() == Op::WHERE ? 1 : 0).dtype();
    const bool fl = dt.is_float(), sg = dt.is_signed();
    if (dt.is_fp8()) unsupported(u, "arithmetic on fp8 values");
    auto intrinsic = [&](ID id) { return b_.CreateIntrinsic(id, {s[0]->getType()}, s); };
    switch (u.op()) {
      case Op::ADD: return fl ? b_.CreateFAdd(s[0], s[1]) : b_.CreateAdd(s[0], s[1]);
      case Op::SUB: return fl ? b_.CreateFSub(s[0], s[1]) : b_.CreateSub(s[0], s[1]);
      case Op::MUL: return fl ? b_.CreateFMul(s[0], s[1]) : b_.CreateMul(s[0], s[1]);
      case Op::FDIV: return b_.CreateFDiv(s[0], s[1]);
      case Op::IDIV: return sg ? b_.CreateSDiv(s[0], s[1]) : b_.CreateUDiv(s[0], s[1]);
      case Op::MOD: return sg ? b_.CreateSRem(s[0], s[1]) : b_.CreateURem(s[0], s[1]);
      case Op::MAX: return intrinsic(fl ? llvm::Intrinsic::maxnum : sg ? llvm::Intrinsic::smax : llvm::Intrinsic::umax);
      case Op::MIN: return intrinsic(fl ? llvm::Intrinsic::minnum : sg ? llvm::Intrinsic::smin : llvm::Intrinsic::umin);
      case Op::POW: return intrinsic(llvm::Intrinsic::pow);
      case Op::CMPLT: return fl ? b_.CreateFCmpOLT(s[0], s[1]) : sg ? b_.CreateICmpSLT(s[0], s[1]) : b_.CreateICmpULT(s[0], s[1]);
      case Op::CMPNE: return fl ? b_.CreateFCmpUNE(s[0], s[1]) : b_.CreateICmpNE(s[0], s[1]);
      case Op::CMPEQ: return fl ? b_.CreateFCmpOEQ(s[0], s[1]) : b_.CreateICmpEQ(s[0], s[1]);
      case Op::AND: return b_.CreateAnd(s[0], s[1]);
      case Op::OR: return b_.CreateOr(s[0], s[1]);
      case Op::XOR: return b_.CreateXor(s[0], s[1]);
      case Op::SHL: return b_.CreateShl(s[0], s[1]);
      case Op::SHR: return sg ? b_.CreateAShr(s[0], s[1]) : b_.CreateLShr(s[0], s[1]);
      case Op::NEG: return fl ? b_.CreateFNeg(s[0]) : b_.CreateNeg(s[0]);
      case Op::RECIP: return b_.CreateFDiv(llvm::ConstantFP::get(s[0]->getType(), 1.0), s[0]);
      case Op::SQRT: return intrinsic(llvm::Intrinsic::sqrt);
      case Op::EXP2: return intrinsic(llvm::Intrinsic::exp2);
      case Op::LOG2: return intrinsic(llvm::Intrinsic::log2);
      case Op::SIN: return intrinsic(llvm::Intrinsic::sin);
      case Op::TRUNC: return intrinsic(llvm::Intrinsic::trunc);
      case Op::POPCOUNT: return intrinsic(llvm::Intrinsic::ctpop);
      case Op::WHERE: return b_.CreateSelect(s[0], s[1], s[2]);
      case Op::MULACC: return fl ? intrinsic(llvm::Intrinsic::fma) : b_.CreateAdd(b_.CreateMul(s[0], s[1]), s[2]);
      default: unsupported(u, "no AMDGPU lowering for this ALU op");
    }
  }

  llvm::Value* wmma(const UOp& u) {
    const auto& w = u.arg_as<WmmaArg>();
    auto m = find_mfma(w, mcpu_);
    if (!m)
      unsupported(u, "no MFMA on " + mcpu_ + " computes " + std::to_string(w.m) + "x" + std::to_string(w.n) + "x" + std::to_string(w.k) +
                         " " + w.input.name() + " -> " + w.accum.name() + " over " + std::to_string(w.threads) + " lanes");
    llvm::Value* a = get(u.src(0));
    llvm::Value* bv = get(u.src(1));
    auto operand = [&](llvm::Value* v) -> llvm::Value* {
      auto* vt = llvm::cast<llvm::FixedVectorType>(v->getType());
      switch (m->operands) {
        case MfmaOperands::Native: return v;
        case MfmaOperands::Bf16AsI16: return b_.CreateBitCast(v, llvm::FixedVectorType::get(b_.getInt16Ty(), vt->getNumElements()));
        case MfmaOperands::Fp8AsI64: return b_.CreateBitCast(v, b_.getInt64Ty());
        case MfmaOperands::F8F6F4AsI32: return b_.CreateBitCast(v, llvm::FixedVectorType::get(b_.getInt32Ty(), vt->getNumElements() / 4));
      }
      return v;
    };
    if (u.src(0).dtype().lanes == 1 || u.src(1).dtype().lanes == 1) {  // one element per lane: f32 MFMA
      return b_.CreateIntrinsic(m->id, llvm::ArrayRef<llvm::Type*>{}, {a, bv, get(u.src(2)), b_.getInt32(0), b_.getInt32(0), b_.getInt32(0)});
    }
    if (m->operands == MfmaOperands::F8F6F4AsI32) {
      // A and B in format 0 (fp8 e4m3, cbsz and blgp), op_sel 0 and scale operands 0 for both:
      // LLVM emits the unscaled v_mfma_f32_*_f8f6f4 for two constant-0 scales (no scaling; an
      // E8M0 byte 0 would be 2^-127 in the scaled instruction, docs/mfma-f8f6f4.md section 4.2).
      llvm::Value* ai = operand(a);
      llvm::Value* bi = operand(bv);
      llvm::Value* zero = b_.getInt32(0);
      return b_.CreateIntrinsic(m->id, {ai->getType(), bi->getType()}, {ai, bi, get(u.src(2)), zero, zero, zero, zero, zero, zero});
    }
    return b_.CreateIntrinsic(m->id, llvm::ArrayRef<llvm::Type*>{}, {operand(a), operand(bv), get(u.src(2)), b_.getInt32(0), b_.getInt32(0), b_.getInt32(0)});
  }

  // ---- atomics: relaxed (monotonic) read-modify-write at the named scope ----

  llvm::SyncScope::ID sync_scope(Scope s) {
    switch (s) {
      case Scope::Workgroup: return ctx_.getOrInsertSyncScopeID("workgroup");
      case Scope::Device: return ctx_.getOrInsertSyncScopeID("agent");
      case Scope::System: break;
    }
    return llvm::SyncScope::System;
  }

  // An atomic behind an index that may be invalid (a `when` region) runs only where it is valid.
  llvm::Value* guarded_atomic(const UOp& u) {
    const UOp& idx = u.src(0);
    if (idx.src().size() <= 2) return atomic(u);
    llvm::BasicBlock* before = b_.GetInsertBlock();
    auto* then = llvm::BasicBlock::Create(ctx_, "atomic", fn_);
    auto* done = llvm::BasicBlock::Create(ctx_, "atomic.done", fn_);
    b_.CreateCondBr(get(idx.src(2)), then, done);
    b_.SetInsertPoint(then);
    llvm::Value* old = atomic(u);
    llvm::BasicBlock* then_end = b_.GetInsertBlock();
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
    llvm::PHINode* phi = b_.CreatePHI(old->getType(), 2);
    phi->addIncoming(llvm::Constant::getNullValue(old->getType()), before);
    phi->addIncoming(old, then_end);
    return phi;
  }

  llvm::Value* atomic(const UOp& u) {
    const auto& a = u.arg_as<AtomicArg>();
    const DType d = u.dtype();
    llvm::Value* ptr = get(u.src(0));
    const llvm::MaybeAlign align(static_cast<uint64_t>(d.itemsize()));
    const auto order = llvm::AtomicOrdering::Monotonic;
    llvm::Instruction* inst = nullptr;
    llvm::Value* old = nullptr;
    if (a.op == AtomicOp::CompareSwap) {
      auto* x = b_.CreateAtomicCmpXchg(ptr, get(u.src(1)), get(u.src(2)), align, order, order, sync_scope(a.scope));
      inst = x;
      old = b_.CreateExtractValue(x, 0);
    } else {
      using Bin = llvm::AtomicRMWInst::BinOp;
      const bool fl = d.is_float(), sg = d.is_signed();
      Bin op = Bin::Xchg;
      switch (a.op) {
        case AtomicOp::Add: op = fl ? Bin::FAdd : Bin::Add; break;
        case AtomicOp::Min: op = sg ? Bin::Min : Bin::UMin; break;
        case AtomicOp::Max: op = sg ? Bin::Max : Bin::UMax; break;
        default: break;
      }
      auto* rmw = b_.CreateAtomicRMW(op, ptr, get(u.src(1)), align, order, sync_scope(a.scope));
      inst = rmw;
      old = rmw;
    }
    // weft's buffers are ordinary device memory: no fine-grained or remote (peer) memory, which
    // lets LLVM use the hardware's float atomics instead of a compare-and-swap loop.
    inst->setMetadata("amdgpu.no.fine.grained.memory", llvm::MDNode::get(ctx_, {}));
    inst->setMetadata("amdgpu.no.remote.memory", llvm::MDNode::get(ctx_, {}));
    return old;
  }

  // ---- inline assembly: {0}, {1}, ... name the operands (VGPRs), {out} customi's result ----

  llvm::Value* inline_asm(const UOp& u) {
    const bool has_result = u.op() == Op::CUSTOMI;
    std::vector<llvm::Value*> args;
    std::vector<llvm::Type*> types;
    std::string constraints = has_result ? "=v" : "";
    for (const UOp& x : u.src()) {
      if (x.is_effect() && !x.is_valued_effect()) continue;  // a predecessor, not an operand
      if (x.dtype().is_bool() || x.dtype().is_vector()) unsupported(u, "inline assembly operands are scalars of 8 to 64 bits, not " + x.dtype().name());
      args.push_back(get(x));
      types.push_back(args.back()->getType());
      constraints += std::string(constraints.empty() ? "" : ",") + "v";
    }
    std::string text = u.arg_as<EffectArg>().text;
    const size_t shift = has_result ? 1 : 0;
    for (size_t i = args.size(); i-- > 0;) replace_all(text, "{" + std::to_string(i) + "}", "$" + std::to_string(i + shift));
    if (has_result) replace_all(text, "{out}", "$0");
    if (text.find('{') != std::string::npos) unsupported(u, "the text names an operand it does not have: " + text);
    auto* fty = llvm::FunctionType::get(has_result ? type(u.dtype(), &u) : b_.getVoidTy(), types, false);
    if (auto err = llvm::InlineAsm::verify(fty, constraints)) unsupported(u, "LLVM rejects the inline assembly's operands: " + llvm::toString(std::move(err)));
    return b_.CreateCall(llvm::InlineAsm::get(fty, text, constraints, /*hasSideEffects=*/true), args);
  }

  static void replace_all(std::string& s, const std::string& from, const std::string& to) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  }

  void effect(const UOp& e) {
    switch (e.op()) {
      case Op::CUSTOM: inline_asm(e); return;
      case Op::STORE: return store(e);
      case Op::BARRIER: {
        // Barriers the pipeline inserts have no arg (monostate): fenced.
        const auto* a = std::get_if<EffectArg>(&e.arg());
        return workgroup_barrier(!a || a->value != static_cast<Wide>(BarrierFence::None));
      }
      case Op::PRIORITY: intrinsic(llvm::Intrinsic::amdgcn_s_setprio, {b_.getInt16(static_cast<uint16_t>(e.arg_as<EffectArg>().value))}); return;
      case Op::WAIT: return waitcnt(e);
      case Op::ASYNC_COMMIT: return;  // vmcnt counts each copy; there are no groups to close
      case Op::SCHED_BARRIER:
        intrinsic(llvm::Intrinsic::amdgcn_sched_barrier, {b_.getInt32(static_cast<uint32_t>(e.arg_as<SchedArg>().mask))});
        return;
      case Op::SCHED_GROUP_BARRIER: {
        const auto& a = e.arg_as<SchedArg>();
        intrinsic(llvm::Intrinsic::amdgcn_sched_group_barrier, {b_.getInt32(static_cast<uint32_t>(a.mask)),
                                                                b_.getInt32(static_cast<uint32_t>(a.size)), b_.getInt32(static_cast<uint32_t>(a.sync_id))});
        return;
      }
      case Op::WHEN: return branch(e);
      case Op::ASYNC_COPY: return async_copy(e);
      case Op::GRID_BARRIER: return grid_barrier(e);
      default: unsupported(e, "no AMDGPU lowering for this effect");
    }
  }

  // grid_barrier (builder.h): the workgroup meets (a fenced barrier); its first thread releases
  // the workgroup's writes at agent scope, arrives on the counter (workgroup 0 adds 2^31 - (G - 1),
  // the others 1: the top bit flips when the last arrives) and waits for the flip, sleeping
  // between reads (s_sleep, which also hands the emulator's cooperative launch to the other
  // workgroups), then acquires at agent scope (invalidating the CU's cache for the workgroup's
  // reads); the workgroup meets again. G comes from the dispatch packet (grid and workgroup sizes).
  void grid_barrier(const UOp& e) {
    const llvm::SyncScope::ID agent = ctx_.getOrInsertSyncScopeID("agent");
    llvm::Value* counter = get(e.src(0));
    workgroup_barrier(true);
    llvm::Value* first_thread = b_.getTrue();
    llvm::Value* first_group = b_.getTrue();
    static const llvm::Intrinsic::ID group[] = {llvm::Intrinsic::amdgcn_workgroup_id_x, llvm::Intrinsic::amdgcn_workgroup_id_y,
                                                llvm::Intrinsic::amdgcn_workgroup_id_z};
    static const llvm::Intrinsic::ID item[] = {llvm::Intrinsic::amdgcn_workitem_id_x, llvm::Intrinsic::amdgcn_workitem_id_y,
                                               llvm::Intrinsic::amdgcn_workitem_id_z};
    for (int d = 0; d < 3; ++d) {
      first_thread = b_.CreateAnd(first_thread, b_.CreateICmpEQ(b_.CreateIntrinsic(item[d], llvm::ArrayRef<llvm::Type*>{}, {}), b_.getInt32(0)));
      first_group = b_.CreateAnd(first_group, b_.CreateICmpEQ(b_.CreateIntrinsic(group[d], llvm::ArrayRef<llvm::Type*>{}, {}), b_.getInt32(0)));
    }
    auto* arrive = llvm::BasicBlock::Create(ctx_, "grid.arrive", fn_);
    auto* wait = llvm::BasicBlock::Create(ctx_, "grid.wait", fn_);
    auto* passed = llvm::BasicBlock::Create(ctx_, "grid.passed", fn_);
    auto* met = llvm::BasicBlock::Create(ctx_, "grid.met", fn_);
    b_.CreateCondBr(first_thread, arrive, met);
    b_.SetInsertPoint(arrive);
    // hsa_kernel_dispatch_packet_t: workgroup_size_x/y/z (uint16) at bytes 4, 6, 8, grid_size_x/y/z (uint32, work-items) at 12, 16, 20.
    llvm::Value* packet = b_.CreateIntrinsic(llvm::Intrinsic::amdgcn_dispatch_ptr, llvm::ArrayRef<llvm::Type*>{}, {});
    llvm::Value* groups = b_.getInt32(1);
    for (int d = 0; d < 3; ++d) {
      llvm::Value* size = b_.CreateZExt(b_.CreateLoad(b_.getInt16Ty(), b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), packet, 4 + 2 * d)), b_.getInt32Ty());
      llvm::Value* grid = b_.CreateLoad(b_.getInt32Ty(), b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), packet, 12 + 4 * d));
      groups = b_.CreateMul(groups, b_.CreateUDiv(b_.CreateAdd(grid, b_.CreateSub(size, b_.getInt32(1))), size));
    }
    llvm::Value* add = b_.CreateSelect(first_group, b_.CreateSub(b_.getInt32(0x80000000u), b_.CreateSub(groups, b_.getInt32(1))), b_.getInt32(1));
    b_.CreateFence(llvm::AtomicOrdering::Release, agent);
    auto* arrival = b_.CreateAtomicRMW(llvm::AtomicRMWInst::Add, counter, add, llvm::MaybeAlign(4), llvm::AtomicOrdering::Monotonic, agent);
    arrival->setMetadata("amdgpu.no.fine.grained.memory", llvm::MDNode::get(ctx_, {}));
    b_.CreateBr(wait);
    b_.SetInsertPoint(wait);
    intrinsic(llvm::Intrinsic::amdgcn_s_sleep, {b_.getInt32(1)});
    auto* now = b_.CreateLoad(b_.getInt32Ty(), counter);
    now->setAtomic(llvm::AtomicOrdering::Monotonic, agent);
    now->setAlignment(llvm::Align(4));
    llvm::Value* flipped = b_.CreateICmpNE(b_.CreateAnd(b_.CreateXor(now, arrival), b_.getInt32(0x80000000u)), b_.getInt32(0));
    b_.CreateCondBr(flipped, passed, wait);
    b_.SetInsertPoint(passed);
    b_.CreateFence(llvm::AtomicOrdering::Acquire, agent);
    b_.CreateBr(met);
    b_.SetInsertPoint(met);
    workgroup_barrier(true);
  }

  // A barrier of the workgroup; `fenced`: workgroup-scope release before it and acquire after.
  void workgroup_barrier(bool fenced) {
    if (fenced) b_.CreateFence(llvm::AtomicOrdering::Release, ctx_.getOrInsertSyncScopeID("workgroup"));
    intrinsic(llvm::Intrinsic::amdgcn_s_barrier, {});
    if (fenced) b_.CreateFence(llvm::AtomicOrdering::Acquire, ctx_.getOrInsertSyncScopeID("workgroup"));
  }

  void intrinsic(llvm::Intrinsic::ID id, llvm::ArrayRef<llvm::Value*> args) {
    b_.CreateIntrinsic(id, llvm::ArrayRef<llvm::Type*>{}, args);
  }

  // s_waitcnt with the gfx9 immediate; counts above a counter's maximum are an error (a smaller
  // wait would be wrong, a larger one cannot be encoded).
  void waitcnt(const UOp& e) {
    const auto& w = e.arg_as<WaitArg>();
    if (w.vm > kMaxVmcnt) unsupported(e, "vm count " + std::to_string(w.vm) + " is above vmcnt's maximum of " + std::to_string(kMaxVmcnt) + " on " + mcpu_);
    if (w.lgkm > kMaxLgkmcnt)
      unsupported(e, "lgkm count " + std::to_string(w.lgkm) + " is above lgkmcnt's maximum of " + std::to_string(kMaxLgkmcnt) + " on " + mcpu_);
    intrinsic(llvm::Intrinsic::amdgcn_s_waitcnt, {b_.getInt32(waitcnt_immediate(w.vm, w.lgkm))});
  }

  // A synchronization statement on a wave-uniform condition (resolve_when checked it): a real
  // branch, since a scalar instruction like s_barrier runs whatever EXEC holds. The condition
  // derives from SGPR values (widx, workgroup ids), so LLVM emits s_cbranch_scc.
  void branch(const UOp& e) {
    auto* then = llvm::BasicBlock::Create(ctx_, "when", fn_);
    auto* done = llvm::BasicBlock::Create(ctx_, "when.done", fn_);
    b_.CreateCondBr(get(e.src(0)), then, done);
    b_.SetInsertPoint(then);
    effect(e.src(1));
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
  }

  // global -> LDS without registers: buffer_load ... lds. The hardware writes lane l's data at
  // M0 (wave-uniform) + l * size, so the destination must be base + lidx0 * elements with
  // whole waves along x (checked); the base is lane 0's address, read into an SGPR.
  void async_copy(const UOp& e) {
    const UOp& dst = e.src(0);
    const UOp& src = e.src(1);
    const int64_t elements = e.dtype().lanes;
    const int64_t size = elements * e.dtype().element().itemsize();
    const bool gfx950 = mcpu_ == "gfx950";
    if (!(size == 1 || size == 2 || size == 4 || (gfx950 && (size == 12 || size == 16))))
      unsupported(e, std::to_string(size) + " bytes per lane; buffer_load ... lds moves 1, 2 or 4 bytes" +
                         (gfx950 ? std::string(", or 12 or 16") : std::string(" on gfx942 (12 and 16 on gfx950)")));
    if (dst.src().size() > 2) unsupported(e, "a conditional LDS destination; guard the global source instead (its lanes then write zeros)");
    check_lane_linear(e);
    UOp root = src.src(0);
    while (root.op() == Op::AFTER) root = root.src(0);
    llvm::Value* base = b_.CreatePtrToInt(buffer_pointer(src.src(0)), b_.getInt64Ty());
    uint64_t records = lower::kMaxBufferResourceBytes;  // run-time sizes: the runtime checks them at launch
    if (std::all_of(root.shape().begin(), root.shape().end(), [](const UOp& d) { return d.is_const(); })) {
      records = static_cast<uint64_t>(root.dtype().itemsize());
      for (const UOp& d : root.shape()) records *= static_cast<uint64_t>(d.const_int());
      if (records > lower::kMaxBufferResourceBytes)
        unsupported(e, "a source buffer of " + std::to_string(records) + " bytes; buffer_load ... lds takes 32-bit byte offsets (at most " +
                           std::to_string(lower::kMaxBufferResourceBytes) + " bytes)");
    }
    llvm::Value* rsrc = llvm::PoisonValue::get(llvm::FixedVectorType::get(b_.getInt32Ty(), 4));
    rsrc = b_.CreateInsertElement(rsrc, b_.CreateTrunc(base, b_.getInt32Ty()), b_.getInt32(0));
    rsrc = b_.CreateInsertElement(rsrc, b_.CreateAnd(b_.CreateTrunc(b_.CreateLShr(base, 32), b_.getInt32Ty()), 0xFFFF), b_.getInt32(1));
    rsrc = b_.CreateInsertElement(rsrc, b_.getInt32(static_cast<uint32_t>(records)), b_.getInt32(2));
    rsrc = b_.CreateInsertElement(rsrc, b_.getInt32(0x00020000), b_.getInt32(3));  // raw buffer, 32-bit data format
    llvm::Value* voffset = b_.CreateMul(b_.CreateSExtOrTrunc(get(src.src(1)), b_.getInt32Ty()),
                                        b_.getInt32(static_cast<uint32_t>(root.dtype().itemsize())));
    // A lane whose source is not valid (a ragged edge, a masked view) reads at an offset past
    // every num_records: the buffer's range check makes it write zeros to its LDS bytes
    // without touching memory (CDNA3/CDNA4 ISA, buffer range checking).
    if (src.src().size() > 2) voffset = b_.CreateSelect(get(src.src(2)), voffset, b_.getInt32(0xFFFFFFFFu));
    // The wave's base: this lane's LDS address less lane * size, the same in every lane.
    llvm::Value* lane = b_.CreateIntrinsic(llvm::Intrinsic::amdgcn_mbcnt_hi, llvm::ArrayRef<llvm::Type*>{},
                                           {b_.getInt32(~0u), b_.CreateIntrinsic(llvm::Intrinsic::amdgcn_mbcnt_lo, llvm::ArrayRef<llvm::Type*>{},
                                                                                 {b_.getInt32(~0u), b_.getInt32(0)})});
    llvm::Value* lds = b_.CreatePtrToInt(get(dst), b_.getInt32Ty());
    llvm::Value* wave_base = b_.CreateSub(lds, b_.CreateMul(lane, b_.getInt32(static_cast<uint32_t>(size))));
    wave_base = b_.CreateIntrinsic(llvm::Intrinsic::amdgcn_readfirstlane, {b_.getInt32Ty()}, {wave_base});
    b_.CreateIntrinsic(llvm::Intrinsic::amdgcn_raw_buffer_load_lds, llvm::ArrayRef<llvm::Type*>{},
                       {rsrc, b_.CreateIntToPtr(wave_base, b_.getPtrTy(3)), b_.getInt32(static_cast<uint32_t>(size)), voffset,
                        b_.getInt32(0), b_.getInt32(0), b_.getInt32(0)});
  }

  void check_lane_linear(const UOp& e) {
    const UOp& dst = e.src(0).src(1);
    const int64_t elements = e.dtype().lanes;
    const auto& block = kernel_.launch.block;
    const int64_t bx = static_cast<int64_t>(block[0].const_int());
    const int64_t threads = bx * static_cast<int64_t>(block[1].const_int() * block[2].const_int());
    if (bx % 64 != 0 && bx != threads)
      unsupported(e, "the block's x dimension (" + std::to_string(bx) + ") must hold whole waves (a multiple of 64) for LDS DMA");
    UOp lidx0;
    for (const UOp& u : toposort(dst))
      if (u.op() == Op::SPECIAL && u.arg_as<std::string>() == "lidx0") lidx0 = u;
    if (!lidx0.node()) unsupported(e, "the LDS destination does not depend on lidx0; each lane writes base + lane * elements");
    UOp rest = simplify(dst - lidx0.cast(dst.dtype()) * dst.const_like(Wide(elements)));
    if (lower::depends_on(rest, lidx0))
      unsupported(e, "the LDS destination " + expr_string(dst) + " is not base + lidx0*" + std::to_string(elements) +
                         ": buffer_load ... lds writes lane l at M0 + l * size");
  }

  void store(const UOp& e) {
    if (is_matrix_write(e)) unsupported(e, "stmatrix (a cross-lane shared-memory write) is NVIDIA's; AMDGPU has none");
    const UOp& idx = e.src(0);
    if (idx.src().size() <= 2) {
      b_.CreateAlignedStore(get(e.src(1)), get(idx), alignment(idx));
      return;
    }
    auto* then = llvm::BasicBlock::Create(ctx_, "store", fn_);
    auto* done = llvm::BasicBlock::Create(ctx_, "stored", fn_);
    b_.CreateCondBr(get(idx.src(2)), then, done);
    b_.SetInsertPoint(then);
    b_.CreateAlignedStore(get(e.src(1)), get(idx), alignment(idx));
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
  }

  const lower::LoweredKernel& kernel_;
  std::string mcpu_;
  llvm::LLVMContext& ctx_;
  std::unique_ptr<llvm::Module> module_;
  llvm::IRBuilder<> b_;
  llvm::Function* fn_ = nullptr;
  std::map<int64_t, llvm::Value*> buffers_;
  std::unordered_map<const Node*, llvm::Value*> values_;
  std::vector<Loop> loops_;
};

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::string module_text(const llvm::Module& m) {
  std::string text;
  llvm::raw_string_ostream os(text);
  m.print(os, nullptr);
  return text;
}

// LLVM's errors (an inline assembly statement it cannot parse, say) as text, instead of its
// default of printing them and aborting the process.
void collect_errors(const llvm::DiagnosticInfo* info, void* sink) {
  if (info->getSeverity() != llvm::DS_Error) return;
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::DiagnosticPrinterRawOStream printer(os);
  info->print(printer);
  *static_cast<std::string*>(sink) += (static_cast<std::string*>(sink)->empty() ? "" : "; ") + os.str();
}

}  // namespace

KernelCode compile_kernel(const lower::LoweredKernel& kernel, std::string_view mcpu, std::string* ir_before, std::string* ir_after) {
  KernelCode out;
  auto machine = make_target_machine(mcpu);
  auto t = std::chrono::steady_clock::now();
  llvm::LLVMContext context;
  std::string errors;
  context.setDiagnosticHandlerCallBack(collect_errors, &errors);
  std::unique_ptr<llvm::Module> module = Renderer(kernel, mcpu, context).run();
  module->setTargetTriple(machine->getTargetTriple());
  module->setDataLayout(machine->createDataLayout());
  verify_module(*module, "the rendered LLVM IR of kernel " + kernel.name);
  if (ir_before) *ir_before = module_text(*module);
  out.times.parse_seconds = seconds_since(t);
  t = std::chrono::steady_clock::now();
  optimize(*module, *machine);
  if (ir_after) *ir_after = module_text(*module);
  out.times.optimize_seconds = seconds_since(t);
  t = std::chrono::steady_clock::now();
  const std::vector<char> object = emit_object(*module, *machine);
  if (!errors.empty()) throw Error("LLVM could not compile kernel " + kernel.name + " for " + std::string(mcpu) + ": " + errors);
  out.times.llvm_seconds = seconds_since(t);
  t = std::chrono::steady_clock::now();
  out.code_object = link_shared(object);
  out.times.link_seconds = seconds_since(t);
  return out;
}

}  // namespace weft::amdgpu
