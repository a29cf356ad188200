// weft bench SUITE|KERNEL [--device SPEC] [--sizes LIST] [--repetitions N] [--warmup N] [--seed N]
//                         [--json FILE] [--plot FILE.svg]
#pragma once

#include <string>
#include <vector>

namespace weft::cli {

// Prints a progress line on stderr while it runs, then the table on stdout. Exit status 1 when
// a check of weft's output against its peer fails (the table says which).
int bench_command(const std::vector<std::string>& args);

}  // namespace weft::cli
