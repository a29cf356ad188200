// Pass 3b: the symbolic simplifier (symbolic.h) over the whole kernel.
#include "weft/lowering/passes.h"
#include "weft/lowering/symbolic.h"

namespace weft::lower {

UOp simplify_kernel(const UOp& kernel) { return simplify(kernel); }

}  // namespace weft::lower
