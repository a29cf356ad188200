// weft layout [NAME [--svg FILE]]: the layout catalog (kernels/layout_catalog.h) as tables and
// pictures.
#pragma once

#include <string>
#include <vector>

namespace weft::cli {

// No NAME: list the catalog. NAME: print the layout as a table, one line per lane (or row),
// and with --svg write its picture to FILE. An unknown name is a UsageError.
int layout_command(const std::vector<std::string>& args);

}  // namespace weft::cli
