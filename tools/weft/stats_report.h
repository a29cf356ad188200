// `weft stats` output: a kernel's statistics (emu::KernelStats) as a table for people or as JSON
// for scripts. The JSON fields are listed in docs/guide.md.
#pragma once

#include <ostream>

#include "weft/emulator/code_stats.h"

namespace weft::cli {

void write_stats_table(const emu::KernelStats& s, std::ostream& out);
void write_stats_json(const emu::KernelStats& s, std::ostream& out);

}  // namespace weft::cli
