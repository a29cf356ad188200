#include "layout_command.h"

#include <fstream>
#include <iostream>

#include "commands.h"
#include "weft/dsl/error.h"
#include "weft/kernels/layout_catalog.h"
#include "weft/kernels/layout_svg.h"

namespace weft::cli {
namespace {

std::string dims_text(const std::vector<tile::LayoutDim>& dims) {
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + dims[i].name + " " + std::to_string(int64_t{1} << dims[i].bits);
  return s + ")";
}

bool has(const tile::Layout& l, const std::string& name) {
  for (const tile::LayoutDim& d : l.in_dims())
    if (d.name == name) return true;
  return false;
}

// Lanes down the page where there are lanes (registers or bytes across), else the layout's own
// order (row down, col across).
std::string table_of(const tile::Layout& l) {
  if (has(l, "lane") && has(l, "register")) return l.table("lane", "register");
  if (has(l, "lane") && has(l, "byte")) return l.table("lane", "byte");
  return l.table();
}

}  // namespace

int layout_command(const std::vector<std::string>& args) {
  std::string name, svg;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--svg" || a.starts_with("--svg=")) {
      svg = a == "--svg" ? (i + 1 < args.size() ? args[++i] : "") : a.substr(6);
      if (svg.empty()) throw UsageError("layout: --svg needs a file name");
    } else if (a.starts_with("-")) {
      throw UsageError("layout: unknown option '" + a + "'");
    } else if (name.empty()) {
      name = a;
    } else {
      throw UsageError("layout: more than one layout given ('" + name + "' and '" + a + "')");
    }
  }
  if (name.empty()) {
    if (!svg.empty()) throw UsageError("layout: --svg needs a layout name (see 'weft layout')");
    for (const std::string& line : tile::layout_catalog()) std::cout << line << "\n";
    return 0;
  }
  tile::NamedLayout found = [&] {
    try {
      return tile::find_layout(name);
    } catch (const Error& e) {
      // A name of a known family gets the reason; any other name the whole catalog.
      const std::string family = name.substr(0, name.find('.'));
      for (const std::string& f : tile::layout_families())
        if (f == family) throw UsageError("layout: " + std::string(e.what()) + " (see 'weft layout')");
      std::string known;
      for (const std::string& line : tile::layout_catalog()) known += "\n  " + line.substr(0, line.find('\t'));
      throw UsageError("layout: " + std::string(e.what()) + "; the catalog:" + known);
    }
  }();
  // The picture first, so that a layout without one fails before anything is printed.
  const std::string picture = svg.empty() ? "" : tile::layout_svg(found.layout, {found.name, found.element_bytes, 64});
  std::cout << "# " << found.name << ": " << dims_text(found.layout.in_dims()) << " -> " << dims_text(found.layout.out_dims()) << "\n"
            << table_of(found.layout);
  if (!svg.empty()) {
    std::ofstream out(svg, std::ios::binary);
    out << picture;
    if (!out) throw std::runtime_error("layout: cannot write " + svg);
  }
  return 0;
}

}  // namespace weft::cli
