#include "weft/lowering/index_program.h"

#include <algorithm>
#include <array>
#include <span>

#include "weft/dsl/alu.h"
#include "weft/dsl/print.h"

namespace weft::lower {

IndexProgram::IndexProgram(const UOp& expr, std::span<const std::string> variables) : IndexProgram(expr) {
  for (Step& s : steps_)
    if (s.op == Op::DEFINE_VAR)
      if (const auto it = std::find(variables.begin(), variables.end(), s.variable); it != variables.end()) s.position = it - variables.begin();
}

IndexProgram::IndexProgram(const UOp& expr) : text_(expr_string(expr)) {
  std::map<const Node*, uint32_t> slot;
  bool has_variable = false;
  for (const UOp& u : toposort(expr)) {
    Step s;
    s.op = u.op();
    if (u.op() == Op::CONST && !u.dtype().is_float()) {
      s.value = u.const_int();
    } else if (u.op() == Op::DEFINE_VAR) {
      s.variable = u.arg_as<VarArg>().name;
      has_variable = true;
    } else if (opsets::alu.contains(u.op()) && u.src().size() <= 3) {
      s.operand = opsets::comparison.contains(u.op()) ? u.src(0).dtype() : u.dtype();
      for (const UOp& x : u.src()) s.src.push_back(slot.at(x.node()));
    } else {
      error_ = "cannot evaluate " + std::string(op_name(u.op())) + " in " + text_ + " at launch";
      return;
    }
    slot[u.node()] = static_cast<uint32_t>(steps_.size());
    steps_.push_back(std::move(s));
  }
  if (has_variable) return;
  // No variables: one value, unless evaluating it fails (then it fails at every launch).
  std::vector<Wide> values(steps_.size());
  try {
    constant_ = run([&](const Step& s) -> Wide { unbound(s); }, values.data());
    steps_.clear();
  } catch (const Error&) {
  }
}

void IndexProgram::unbound(const Step& s) const { throw Error("variable " + s.variable + " is not bound (it sizes " + text_ + ")"); }

// `variable(step)`: the value of a DEFINE_VAR step (it throws where the variable is not bound).
template <class Lookup>
Wide IndexProgram::run(const Lookup& variable, Wide* values) const {
  for (size_t i = 0; i < steps_.size(); ++i) {
    const Step& s = steps_[i];
    if (s.op == Op::CONST) {
      values[i] = s.value;
    } else if (s.op == Op::DEFINE_VAR) {
      values[i] = variable(s);
    } else {
      std::array<Wide, 3> args{};
      for (size_t j = 0; j < s.src.size(); ++j) args[j] = values[s.src[j]];
      const auto r = exec_int(s.op, s.operand, std::span<const Wide>(args.data(), s.src.size()));
      if (!r) throw Error("cannot evaluate " + text_ + " at launch: division by zero");
      values[i] = *r;
    }
  }
  return values[steps_.size() - 1];
}

template <class Lookup>
int64_t IndexProgram::evaluate_with(const Lookup& variable) const {
  if (!error_.empty()) throw Error(error_);
  if (steps_.empty()) return static_cast<int64_t>(constant_);
  if (steps_.size() <= kInlineSteps) {
    std::array<Wide, kInlineSteps> values;
    return static_cast<int64_t>(run(variable, values.data()));
  }
  std::vector<Wide> values(steps_.size());
  return static_cast<int64_t>(run(variable, values.data()));
}

int64_t IndexProgram::evaluate(const std::map<std::string, int64_t>& variables) const {
  return evaluate_with([&](const Step& s) -> Wide {
    const auto it = variables.find(s.variable);
    if (it == variables.end()) unbound(s);
    return it->second;
  });
}

int64_t IndexProgram::evaluate_in_order(std::span<const int64_t> values) const {
  return evaluate_with([&](const Step& s) -> Wide {
    if (s.position < 0 || static_cast<size_t>(s.position) >= values.size()) unbound(s);
    return values[static_cast<size_t>(s.position)];
  });
}

}  // namespace weft::lower
