#include "weft/lowering/pipeline.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <type_traits>

#include "weft/dsl/alu.h"
#include "weft/dsl/print.h"
#include "weft/dsl/verify.h"
#include "weft/lowering/index_program.h"
#include "weft/lowering/passes.h"
#include "passes/graph_utils.h"

namespace weft::lower {

const std::vector<Pass>& passes() {
  static const std::vector<Pass> list{
      {"verify", "check the graph (verifier rules; no changes)",
       [](const UOp& g, PassContext&) { verify(g); return g; }},
      {"pin_loop_bodies", "each loop's body lists the effects it reaches that use its range (before any fold can drop that use)",
       [](const UOp& g, PassContext&) { return pin_loop_bodies(g); }},
      {"resolve_unshard", "shards: indices into UNSHARD views become indices into each thread's (device's) shard",
       [](const UOp& g, PassContext&) { return resolve_unshard(g); }},
      {"resolve_devices", "DEVICE ranges (mesh axes) become the device-index variables a mesh launch sets per shard",
       [](const UOp& g, PassContext&) { return resolve_devices(g); }},
      {"flatten_views", "views and multi-dimensional indices become flat indices (padding and masks add validity)",
       [](const UOp& g, PassContext&) { return flatten_views(g); }},
      {"resolve_when", "when(cond, effects): cond guards every access in the region",
       [](const UOp& g, PassContext&) { return resolve_when(g); }},
      {"split_ranges", "WEAK/REDUCE/LOOP ranges used only as r//c and r%c become two ranges",
       [](const UOp& g, PassContext&) { return split_ranges(g); }},
      {"simplify", "symbolic simplification and range simplification",
       [](const UOp& g, PassContext&) { return simplify_kernel(g); }},
      {"expand", "UPCAST/UNROLL ranges unrolled; CONTRACT to vectors",
       [](const UOp& g, PassContext&) { return simplify_kernel(expand_ranges(g)); }},
      {"reduce_across_threads", "REDUCE over thread ranges: shuffles within a wave, shared memory across waves",
       [](const UOp& g, PassContext& c) { return reduce_across_threads(g, c.wave_size); }},
      {"reduce_to_accumulators", "REDUCE becomes a register accumulator",
       [](const UOp& g, PassContext&) { return reduce_to_accumulators(g); }},
      {"ranges_to_hardware", "GLOBAL/LOCAL ranges become workgroup/work-item ids; launch dimensions",
       [](const UOp& g, PassContext& c) { return ranges_to_hardware(g, c.launch, c.wave_size); }},
      {"coalesce_stores", "devectorize; consecutive scalar stores merge into vector stores (aliased ones stay)",
       [](const UOp& g, PassContext&) { return coalesce_stores(simplify_kernel(g)); }},
      {"lower_index_dtype", "index arithmetic to int32 where ranges prove it safe, else int64",
       [](const UOp& g, PassContext&) { return lower_index_dtype(g); }},
      {"insert_barriers", "barriers for LOCAL memory: read-after-write and write-after-read",
       [](const UOp& g, PassContext&) { return insert_barriers(g); }},
      {"nest_loops", "control flow: each END closes one range, nested by range id",
       [](const UOp& g, PassContext&) { return nest_loops(g); }},
  };
  return list;
}

void check_pass_name(std::string_view name) {
  if (name == "all" || name == "linearize") return;
  std::string names;
  for (const Pass& p : passes()) {
    if (p.name == name) return;
    names += " " + p.name;
  }
  throw Error("no pass named '" + std::string(name) + "'; the passes are:" + names + " linearize (or 'all')");
}

UOp canonical_allocations(const UOp& kernel) {
  // One walk, each placeholder and each effect site replaced once (a substitution to a fixed
  // point could rename one twice when a new number is an old one). Sites count from 1: 0 means
  // "no site" (a pipeline-inserted barrier).
  std::map<AddrSpace, int64_t> next;
  std::map<int64_t, int64_t> sites;
  return transform(kernel, [&](const UOp& old, const UOp& u) -> std::optional<UOp> {
    if (const auto site = effect_site(old.arg()); site && *site != 0) {
      const int64_t renamed = sites.emplace(*site, static_cast<int64_t>(sites.size()) + 1).first->second;
      return u.with_arg(std::visit(
          [&](const auto& a) -> Arg {
            using A = std::decay_t<decltype(a)>;
            if constexpr (std::is_same_v<A, EffectArg> || std::is_same_v<A, WaitArg> || std::is_same_v<A, SchedArg> ||
                          std::is_same_v<A, WgmmaArg> || std::is_same_v<A, TmaArg>) {
              A r = a;
              r.site = renamed;
              return r;
            } else {
              return a;
            }
          },
          old.arg()));
    }
    if (old.op() != Op::PLACEHOLDER || old.arg_as<BufferArg>().space == AddrSpace::GLOBAL) return std::nullopt;
    const AddrSpace space = old.arg_as<BufferArg>().space;
    return u.with_arg(BufferArg{next[space]++, space});
  });
}

std::vector<int64_t> buffer_resource_slots(const LoweredKernel& kernel) {
  std::vector<int64_t> slots;
  for (const UOp& u : toposort(kernel.graph)) {
    if (u.op() != Op::ASYNC_COPY) continue;
    UOp root = u.src(1).src(0);
    while (root.op() == Op::AFTER) root = root.src(0);
    const int64_t slot = root.arg_as<BufferArg>().slot;
    if (std::find(slots.begin(), slots.end(), slot) == slots.end()) slots.push_back(slot);
  }
  return slots;
}

std::vector<KernelParam> kernel_params(const UOp& kernel) {
  std::map<int64_t, UOp> buffers;
  std::map<std::string, UOp> variables;
  std::map<int64_t, TmaArg> tensor_maps;  // by slot: one box and swizzle per buffer
  for (const UOp& u : toposort(kernel)) {
    if (u.op() == Op::TMA_LOAD || u.op() == Op::TMA_STORE) {
      TmaArg box = u.arg_as<TmaArg>();
      box.site = 0;
      box.multicast = false;  // a property of the copy, not of the tensor map
      const int64_t slot = u.src(1).arg_as<BufferArg>().slot;
      auto [it, fresh] = tensor_maps.emplace(slot, box);
      if (!fresh && !(it->second == box))
        throw Error("kernel: the TMA copies of buffer " + std::to_string(slot) + " use two boxes or swizzles (" + arg_to_string(it->second) +
                    ", " + arg_to_string(box) + "); its one tensor map has one");
    }
    if (u.op() == Op::PLACEHOLDER && u.arg_as<BufferArg>().space == AddrSpace::GLOBAL) buffers.emplace(u.arg_as<BufferArg>().slot, u);
    const bool device_range = u.op() == Op::RANGE && u.arg_as<RangeArg>().axis == AxisType::DEVICE;
    if (u.op() == Op::DEFINE_VAR || device_range) {
      const UOp v = device_range ? device_variable(u) : u;
      auto [it, fresh] = variables.emplace(v.arg_as<VarArg>().name, v);
      if (!fresh && !it->second.same(v))
        throw Error("kernel: variable " + it->first + " is defined twice with different bounds or dtypes" +
                    (device_range ? " (DEVICE range " + std::to_string(u.arg_as<RangeArg>().id) + " takes that name)" : ""));
    }
  }
  std::vector<KernelParam> params;
  int64_t expect = 0;
  for (const auto& [slot, b] : buffers) {
    if (slot != expect)
      throw Error("kernel: GLOBAL buffer slots are the kernel's parameter positions and must be 0.." +
                  std::to_string(buffers.size() - 1) + "; slot " + std::to_string(expect) + " is missing");
    params.push_back({KernelParam::Kind::Buffer, "buf" + std::to_string(slot), b.dtype(), slot, b.shape(), {}});
    ++expect;
  }
  for (const auto& [name, v] : variables) {
    DType dt = v.dtype() == dtypes::index ? dtypes::int64 : v.dtype();
    params.push_back({KernelParam::Kind::Scalar, name, dt, -1, {}, v});
  }
  for (const auto& [slot, box] : tensor_maps) {
    const UOp& b = buffers.at(slot);
    params.push_back({KernelParam::Kind::TensorMap, "tmap" + std::to_string(slot), b.dtype(), slot, b.shape(), {}, box});
  }
  return params;
}

namespace {

// A pass's own "name: " at the start of its message (said again by lower()'s prefix).
std::string without_prefix(std::string_view message, std::string_view pass) {
  const std::string prefix = std::string(pass) + ": ";
  if (message.starts_with(prefix)) message.remove_prefix(prefix.size());
  return std::string(message);
}

}  // namespace

LoweredKernel lower(const UOp& kernel, const LowerOptions& options) {
  if (kernel.op() != Op::SINK) throw Error("lower: a kernel is a SINK, got " + std::string(op_name(kernel.op())));
  LoweredKernel out;
  out.name = kernel.arg_as<KernelInfo>().name;
  out.cluster = kernel.arg_as<KernelInfo>().cluster;
  out.dependent_launch = kernel.arg_as<KernelInfo>().dependent_launch;
  out.min_workgroups_per_processor = kernel.arg_as<KernelInfo>().min_workgroups_per_processor;
  if (out.min_workgroups_per_processor < 0)
    throw Error("lower: kernel " + out.name + ": min_workgroups_per_processor must be >= 0, got " + std::to_string(out.min_workgroups_per_processor));
  const std::vector<UOp> nodes = toposort(kernel);
  out.cooperative = std::any_of(nodes.begin(), nodes.end(), [](const UOp& u) { return u.op() == Op::GRID_BARRIER; });
  out.params = kernel_params(kernel);
  out.mesh = mesh_axes(kernel);
  out.device_splits = device_splits(kernel, out.mesh);
  PassContext ctx;
  ctx.wave_size = options.wave_size;
  UOp g = kernel;
  // WEFT_DUMP=PASS (or "all") prints the graph after that pass to stderr. llvm, asm and cuda are
  // the back end's stages: the runtime prints those (CompiledKernel::compile).
  std::function<void(std::string_view, const UOp&)> after = options.after_pass;
  const char* dump = std::getenv("WEFT_DUMP");
  const bool backend_stage = dump && (std::string_view(dump) == "llvm" || std::string_view(dump) == "asm" || std::string_view(dump) == "cuda");
  if (!after && dump && *dump && !backend_stage) {
    const std::string wanted = dump;
    check_pass_name(wanted);
    after = [wanted, name = out.name](std::string_view pass, const UOp& graph) {
      if (wanted == "all" || wanted == pass) std::cerr << "# " << name << " after " << pass << "\n" << graph_string(graph);
    };
  }
  for (const Pass& p : passes()) {
    try {
      g = p.run(g, ctx);
    } catch (const Error& e) {
      throw Error("kernel " + out.name + ", pass " + p.name + ": " + without_prefix(e.what(), p.name));
    }
    if (after) after(p.name, g);
  }
  out.graph = g;
  out.launch = ctx.launch;
  try {
    out.program = linearize(g);
    if (dump && !options.after_pass && (std::string_view(dump) == "all" || std::string_view(dump) == "linearize"))
      std::cerr << "# " << out.name << " after linearize\n" << program_string(out);
  } catch (const Error& e) {
    throw Error("kernel " + out.name + ", pass linearize: " + without_prefix(e.what(), "linearize"));
  }
  try {
    check_async_reads(out.program, ctx.wave_size);
  } catch (const Error& e) {
    throw Error("kernel " + out.name + ", pass check_async_reads: " + without_prefix(e.what(), "check_async_reads"));
  }
  return out;
}

std::string program_string(const LoweredKernel& kernel) {
  std::map<const Node*, size_t> number;
  size_t next = 0;
  std::string out, indent;
  std::function<std::string(const UOp&)> ref = [&](const UOp& u) -> std::string {
    auto it = number.find(u.node());
    if (it != number.end()) return "%" + std::to_string(it->second);
    if (u.op() == Op::PLACEHOLDER || u.op() == Op::AFTER) {
      UOp b = u;
      while (b.op() == Op::AFTER) b = b.src(0);
      if (b.op() != Op::PLACEHOLDER) return ref(b);  // a value after effects is the value
      const auto& a = b.arg_as<BufferArg>();
      return std::string(addrspace_name(a.space)) + "." + std::to_string(a.slot);
    }
    return expr_string(u, 60);
  };
  for (const LinearOp& step : kernel.program) {
    const UOp& u = step.op;
    if (step.kind == LinearOp::Kind::LoopEnd) {
      if (indent.size() >= 2) indent.resize(indent.size() - 2);
      out += indent + "end loop r" + std::to_string(u.arg_as<RangeArg>().id) + "\n";
      continue;
    }
    if (step.kind == LinearOp::Kind::BranchBegin) {
      out += indent + "if " + ref(u.src(0)) + "\n";
      indent += "  ";
      continue;
    }
    if (step.kind == LinearOp::Kind::BranchEnd) {
      if (indent.size() >= 2) indent.resize(indent.size() - 2);
      out += indent + "end if\n";
      continue;
    }
    std::string line = indent;
    if (step.kind != LinearOp::Kind::Effect) {
      const size_t n = next++;
      number[u.node()] = n;  // a value written again in a later scope takes its new number
      line += "%" + std::to_string(n) + " = ";
    }
    line += step.kind == LinearOp::Kind::LoopBegin ? "loop" : std::string(op_name(u.op()));
    line += " " + u.dtype().name();
    for (const UOp& s : u.src())
      if (!(step.kind == LinearOp::Kind::Effect && u.op() == Op::BARRIER)) line += " " + ref(s);
    if (u.op() == Op::CONST || u.op() == Op::SPECIAL || u.op() == Op::DEFINE_VAR || u.op() == Op::RANGE)
      line += " " + arg_to_string(u.arg());
    out += line + "\n";
    if (step.kind == LinearOp::Kind::LoopBegin) indent += "  ";
  }
  return out;
}

int64_t evaluate_index(const UOp& expr, const std::map<std::string, int64_t>& variables) {
  return IndexProgram(expr).evaluate(variables);
}

}  // namespace weft::lower
