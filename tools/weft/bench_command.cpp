#include "bench_command.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>

#include "commands.h"
#include "weft/bench/report.h"
#include "weft/bench/suites.h"
#include "weft/version.h"

namespace weft::cli {

namespace {

int64_t positive(const std::string& option, const std::string& text) {
  size_t used = 0;
  int64_t v = -1;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
  }
  if (used != text.size() || v < 1) throw UsageError("bench: " + option + " takes a positive integer, not '" + text + "'");
  return v;
}

// "4096,8192" (squares) or "512x768x320,256": each item N or MxNxK.
std::vector<std::vector<int64_t>> parse_sizes(const std::string& text) {
  std::vector<std::vector<int64_t>> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    std::vector<int64_t> dims;
    size_t p = 0;
    while (p <= item.size()) {
      const size_t x = std::min(item.find('x', p), item.size());
      dims.push_back(positive("--sizes", item.substr(p, x - p)));
      p = x + 1;
    }
    if (dims.size() != 1 && dims.size() != 3) throw UsageError("bench: a size is N or MxNxK, not '" + item + "'");
    out.push_back(dims);
    start = end + 1;
  }
  return out;
}

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string host_name() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  std::ifstream cpu("/proc/cpuinfo");
  std::string line, model;
  while (std::getline(cpu, line))
    if (line.starts_with("model name")) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  return std::string(buf) + (model.empty() ? "" : " (" + model + ")");
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw std::runtime_error("bench: cannot write " + path);
}

}  // namespace

int bench_command(const std::vector<std::string>& args) {
  bench::Options options;
  std::string what, json_path, plot_path, command = "weft bench";
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    command += " " + a;
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw UsageError("bench: " + a + " needs a value");
      command += " " + args[i + 1];
      return args[++i];
    };
    if (a == "--device") options.device = value();
    else if (a == "--sizes") options.sizes = parse_sizes(value());
    else if (a == "--repetitions") options.repetitions = static_cast<int>(positive(a, value()));
    else if (a == "--warmup") options.warmup = static_cast<int>(positive(a, value()));
    else if (a == "--seed") options.seed = static_cast<uint64_t>(positive(a, value()));
    else if (a == "--no-framework-peers") options.framework_peers = false;
    else if (a == "--no-hold") options.hold = false;
    else if (a == "--json") json_path = value();
    else if (a == "--plot") plot_path = value();
    else if (a.starts_with("-")) throw UsageError("bench: unknown option '" + a + "'");
    else if (what.empty()) what = a;
    else throw UsageError("bench: more than one suite or kernel given ('" + what + "' and '" + a + "')");
  }
  if (what.empty()) {
    std::string list;
    for (const bench::Suite& s : bench::suites()) list += "\n  " + s.name + ": " + s.summary;
    throw UsageError("bench: which suite or kernel? suites:" + list);
  }
  // One progress line, rewritten in place on a terminal, one line per step otherwise.
  const bool terminal = isatty(STDERR_FILENO);
  int step = 0;
  options.progress = [&](const std::string& text) {
    std::fprintf(stderr, terminal ? "\r\033[K[%d] %s ..." : "[%d] %s ...\n", ++step, text.c_str());
    std::fflush(stderr);
  };
  const std::vector<bench::Result> results = bench::run(what, options);
  if (terminal) std::fprintf(stderr, "\r\033[K");
  const bench::RunInfo info{command, now_utc(), host_name(), WEFT_VERSION};
  std::cout << "# " << command << "   (" << info.date << ", " << info.host << ", " << options.repetitions << " timed runs each, median)\n"
            << bench::table(results);
  if (!json_path.empty()) write_file(json_path, bench::json(info, results));
  if (!plot_path.empty()) write_file(plot_path, bench::plot_svg(info, results));
  for (const bench::Result& r : results)
    if (!r.check.against.empty() && !r.check.ok) {
      std::cerr << "weft: bench: " << r.kernel << " " << r.size << " differs from " << r.check.against << "\n";
      return 1;
    }
  return 0;
}

}  // namespace weft::cli
