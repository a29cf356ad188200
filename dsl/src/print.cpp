#include "weft/dsl/print.h"

#include <cctype>
#include <cstdio>
#include <unordered_map>

namespace weft {
namespace {

std::string float_text(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  std::string s = buf;
  if (s.find_first_of(".eni") == std::string::npos) s += ".0";
  return s;
}

std::string const_text(const UOp& u) {
  if (u.dtype().is_bool()) return u.const_int() ? "True" : "False";
  if (const auto* f = std::get_if<FloatConst>(&u.arg())) return float_text(f->value);
  return wide_to_string(u.const_int());
}

const char* infix(Op op) {
  switch (op) {
    case Op::ADD: return "+";
    case Op::SUB: return "-";
    case Op::MUL: return "*";
    case Op::IDIV: return "//";
    case Op::MOD: return "%";
    case Op::FDIV: return "/";
    case Op::CMPLT: return "<";
    case Op::CMPNE: return "!=";
    case Op::CMPEQ: return "==";
    case Op::AND: return "&";
    case Op::OR: return "|";
    case Op::XOR: return "^";
    case Op::SHL: return "<<";
    case Op::SHR: return ">>";
    default: return nullptr;
  }
}

// " swizzle=128B" / " swizzle=64B", or nothing.
std::string swizzle_text(WgmmaSwizzle s) { return s == WgmmaSwizzle::None ? "" : " swizzle=" + std::to_string(swizzle_row_bytes(s)) + "B"; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

class ExprPrinter {
 public:
  explicit ExprPrinter(size_t budget) : budget_(budget) {}

  std::string print(const UOp& u) {
    if (used_ > budget_) return "...";
    std::string s = render(u);
    used_ += s.size();
    return s;
  }

 private:
  std::string list(const std::vector<UOp>& src, size_t from) {
    std::string out;
    for (size_t i = from; i < src.size(); ++i) out += (i > from ? ", " : "") + print(src[i]);
    return out;
  }

  std::string render(const UOp& u) {
    switch (u.op()) {
      case Op::CONST: return const_text(u);
      case Op::DEFINE_VAR: return u.arg_as<VarArg>().name;
      case Op::RANGE: return "r" + std::to_string(u.arg_as<RangeArg>().id);
      case Op::SPECIAL: return u.arg_as<std::string>();
      case Op::PLACEHOLDER: {
        const auto& b = u.arg_as<BufferArg>();
        const char* prefix = b.space == AddrSpace::GLOBAL ? "buf" : b.space == AddrSpace::LOCAL ? "smem" : "reg";
        return prefix + std::to_string(b.slot);
      }
      case Op::INDEX: return print(u.src(0)) + "[" + list(u.src(), 1) + "]";
      case Op::LOAD:  // a cross-lane read shows its kind: ldmatrix_b16(smem1[...])
        if (const auto* kind = std::get_if<std::string>(&u.arg())) return *kind + "(" + print(u.src(0)) + ")";
        return print(u.src(0));
      case Op::NEG: return "(-" + print(u.src(0)) + ")";
      case Op::CAST: return "(" + u.dtype().name() + ")" + print(u.src(0));
      case Op::WHERE: return "where(" + list(u.src(), 0) + ")";
      default: break;
    }
    if (const char* sym = infix(u.op()); sym && u.src().size() == 2)
      return "(" + print(u.src(0)) + sym + print(u.src(1)) + ")";
    if (opsets::alu.contains(u.op()) || opsets::movement.contains(u.op()) || u.op() == Op::AFTER || u.op() == Op::UNSHARD)
      return lower(op_name(u.op())) + "(" + list(u.src(), 0) + ")";
    return std::string(op_name(u.op()));
  }

  size_t budget_;
  size_t used_ = 0;
};

}  // namespace

std::string arg_to_string(const Arg& arg) {
  struct Visitor {
    std::string operator()(std::monostate) const { return ""; }
    std::string operator()(Wide w) const { return wide_to_string(w); }
    std::string operator()(const FloatConst& f) const { return float_text(f.value); }
    std::string operator()(const std::string& s) const { return "\"" + s + "\""; }
    std::string operator()(const ShapeArg& s) const {
      std::string out = "[";
      for (size_t i = 0; i < s.values.size(); ++i) out += (i ? ", " : "") + std::to_string(s.values[i]);
      return out + "]";
    }
    std::string operator()(Op op) const { return std::string(op_name(op)); }
    std::string operator()(const RangeArg& r) const { return "id=" + std::to_string(r.id) + " axis=" + std::string(axis_name(r.axis)); }
    std::string operator()(const BufferArg& b) const { return "slot=" + std::to_string(b.slot) + " " + std::string(addrspace_name(b.space)); }
    std::string operator()(const VarArg& v) const { return v.name + " in [" + wide_to_string(v.min) + ", " + wide_to_string(v.max) + "]"; }
    std::string operator()(const KernelInfo& k) const {
      return "name=" + k.name + (k.cluster > 1 ? " cluster=" + std::to_string(k.cluster) : "") + (k.dependent_launch ? " dependent_launch" : "") +
             (k.min_workgroups_per_processor > 0 ? " min_workgroups=" + std::to_string(k.min_workgroups_per_processor) : "");
    }
    std::string operator()(const WmmaArg& w) const {
      return std::to_string(w.m) + "x" + std::to_string(w.n) + "x" + std::to_string(w.k) + " " + w.input.name() + "->" +
             w.accum.name() + " threads=" + std::to_string(w.threads);
    }
    std::string operator()(const LaneArg& l) const { return std::string(lane_op_name(l.op)) + " width=" + std::to_string(l.width); }
    std::string operator()(const AtomicArg& a) const {
      return std::string(atomic_op_name(a.op)) + " " + std::string(scope_name(a.scope)) + " site=" + std::to_string(a.site);
    }
    std::string operator()(const EffectArg& e) const {
      std::string out = "site=" + std::to_string(e.site);
      if (e.value != 0) out += " value=" + wide_to_string(e.value);
      if (!e.text.empty()) out += " \"" + e.text + "\"";
      return out;
    }
    std::string operator()(const WgmmaArg& w) const {
      auto layout = [](const MatrixLayoutArg& m) {
        return "lbo=" + std::to_string(m.leading_bytes) + " sbo=" + std::to_string(m.stride_bytes) +
               swizzle_text(m.swizzle);
      };
      return "site=" + std::to_string(w.site) + " m64n" + std::to_string(w.n) + "k16 " + w.input.name() + "->float32 a(" +
             (w.a_registers ? std::string("registers") : layout(w.a)) + ") b(" + layout(w.b) + ")";
    }
    std::string operator()(const TmaArg& t) const {
      return "site=" + std::to_string(t.site) + " box=" + std::to_string(t.rows) + "x" + std::to_string(t.cols) +
             swizzle_text(t.swizzle) + (t.multicast ? " multicast" : "");
    }
    std::string operator()(const WaitArg& w) const {
      std::string out = "site=" + std::to_string(w.site);
      if (w.vm >= 0) out += " vm=" + std::to_string(w.vm);
      if (w.lgkm >= 0) out += " lgkm=" + std::to_string(w.lgkm);
      return out;
    }
    std::string operator()(const SchedArg& a) const {
      char mask[16];
      std::snprintf(mask, sizeof mask, "0x%x", static_cast<unsigned>(a.mask));
      std::string out = "site=" + std::to_string(a.site) + " mask=" + mask;
      if (a.size != 0 || a.sync_id != 0) out += " size=" + std::to_string(a.size) + " sync=" + std::to_string(a.sync_id);
      return out;
    }
  };
  return std::visit(Visitor{}, arg);
}

std::string expr_string(const UOp& u, size_t max_length) {
  if (u.is_null()) return "<null>";
  return ExprPrinter(max_length).print(u);
}

std::string graph_string(const UOp& root) {
  std::vector<UOp> order = toposort(root);
  std::unordered_map<const Node*, size_t> number;
  std::string out;
  for (const UOp& u : order) {
    const size_t id = number.size();
    number.emplace(u.node(), id);
    out.append("%").append(std::to_string(id)).append(" = ").append(op_name(u.op())).append(" ").append(u.dtype().name());
    if (!u.src().empty()) {
      out.append(" (");
      for (size_t i = 0; i < u.src().size(); ++i) out.append(i ? ", %" : "%").append(std::to_string(number.at(u.src(i).node())));
      out.append(")");
    }
    std::string a = arg_to_string(u.arg());
    if (!a.empty()) out += " " + a;
    out += "\n";
  }
  return out;
}

}  // namespace weft
