#include "weft/lowering/amdgpu_codegen.h"

#include "amdgpu/target.h"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>

#include <lld/Common/Driver.h>
#include <llvm/AsmParser/Parser.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Triple.h>

#include "weft/dsl/error.h"

LLD_HAS_DRIVER(elf)

namespace weft::amdgpu {

namespace {

constexpr const char* kTriple = "amdgcn-amd-amdhsa";

// The options of every compile; compile_options() spells them out for the compile cache's key.
const llvm::OptimizationLevel& module_pipeline() { return llvm::OptimizationLevel::O3; }
constexpr llvm::CodeGenOptLevel kCodeGenLevel = llvm::CodeGenOptLevel::Default;
constexpr llvm::Reloc::Model kRelocation = llvm::Reloc::PIC_;
constexpr const char* kLinkFlag = "-shared";

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

const llvm::Target& amdgpu_target() {
  static const llvm::Target* target = [] {
    LLVMInitializeAMDGPUTargetInfo();
    LLVMInitializeAMDGPUTarget();
    LLVMInitializeAMDGPUTargetMC();
    LLVMInitializeAMDGPUAsmPrinter();
    LLVMInitializeAMDGPUAsmParser();  // inline assembly (custom/customi) is parsed when the object is emitted
    std::string error;
    const llvm::Target* t = llvm::TargetRegistry::lookupTarget(llvm::Triple(kTriple), error);
    if (!t) throw Error("LLVM has no AMDGPU target: " + error);
    return t;
  }();
  return *target;
}

std::unique_ptr<llvm::Module> parse(std::string_view ir, llvm::LLVMContext& context) {
  llvm::SMDiagnostic diagnostic;
  std::unique_ptr<llvm::Module> module = llvm::parseAssemblyString(llvm::StringRef(ir.data(), ir.size()), diagnostic, context);
  if (!module) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "LLVM IR does not parse: line " << diagnostic.getLineNo() << ", column " << diagnostic.getColumnNo() << ": "
       << diagnostic.getMessage() << "\n  " << diagnostic.getLineContents();
    throw Error(os.str());
  }
  verify_module(*module, "LLVM IR");
  return module;
}

// A private temporary directory (mkdtemp: mode 0700, a fresh name under $TMPDIR or /tmp) for
// lld's input and output, removed with its contents.
class TempDir {
 public:
  TempDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/weft-link-XXXXXX";
    if (!mkdtemp(pattern.data())) throw Error("cannot create a temporary directory for the linker (" + pattern + "): " + std::strerror(errno));
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

void write_file(const std::filesystem::path& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw Error("writing the object for the linker failed (" + path.string() + ")");
}

std::vector<uint8_t> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("the linker wrote no code object (" + path.string() + ")");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw Error("reading the linked code object failed (" + path.string() + ")");
  return bytes;
}

}  // namespace

// lld keeps global state: one link at a time, and none after it says it cannot run again. Its
// input and output are real files in a private temporary directory; the process's standard
// streams are never touched, so other threads may print while it links.
std::vector<uint8_t> link_shared(const std::vector<char>& object) {
  static std::mutex lld_mutex;
  static bool lld_usable = true;
  std::lock_guard lock(lld_mutex);
  if (!lld_usable) throw Error("lld cannot link again in this process (an earlier link left it unusable)");
  const TempDir dir;
  const std::string in_path = (dir.path() / "kernel.o").string(), out_path = (dir.path() / "kernel.hsaco").string();
  write_file(in_path, object);
  const char* args[] = {"ld.lld", kLinkFlag, in_path.c_str(), "-o", out_path.c_str()};
  std::string messages;
  llvm::raw_string_ostream os(messages);
  const lld::Result r = lld::lldMain(args, os, os, {{lld::Gnu, &lld::elf::link}});
  lld_usable = r.canRunAgain;
  if (r.retCode != 0) throw Error("lld could not link the code object: " + os.str());
  return read_file(out_path);
}

std::unique_ptr<llvm::TargetMachine> make_target_machine(std::string_view mcpu) {
  const llvm::Triple triple(kTriple);
  llvm::TargetOptions options;
  const llvm::StringRef cpu(mcpu.data(), mcpu.size());
  std::unique_ptr<llvm::TargetMachine> machine(
      amdgpu_target().createTargetMachine(triple, cpu, "", options, kRelocation, std::nullopt, kCodeGenLevel));
  if (!machine) throw Error("LLVM cannot create a target machine for " + std::string(mcpu));
  if (!machine->getMCSubtargetInfo()->isCPUStringValid(cpu))
    throw Error("unknown AMDGPU target '" + std::string(mcpu) + "' (weft targets gfx942 and gfx950)");
  return machine;
}

void verify_module(const llvm::Module& module, std::string_view what) {
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(module, &os)) throw Error(std::string(what) + " is not valid: " + os.str());
}

void optimize(llvm::Module& module, llvm::TargetMachine& machine) {
  module.setTargetTriple(machine.getTargetTriple());
  module.setDataLayout(machine.createDataLayout());
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder builder(&machine);
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager passes = builder.buildPerModuleDefaultPipeline(module_pipeline());
  passes.run(module, mam);
}

std::vector<char> emit_object(llvm::Module& module, llvm::TargetMachine& machine) {
  module.setTargetTriple(machine.getTargetTriple());
  module.setDataLayout(machine.createDataLayout());
  llvm::SmallVector<char, 0> object;
  llvm::raw_svector_ostream os(object);
  llvm::legacy::PassManager passes;
  if (machine.addPassesToEmitFile(passes, os, nullptr, llvm::CodeGenFileType::ObjectFile))
    throw Error("LLVM cannot emit an object file for " + machine.getTargetCPU().str());
  passes.run(module);
  return {object.begin(), object.end()};
}

std::string llvm_version() { return std::string("LLVM ") + LLVM_VERSION_STRING; }

std::string compile_options() {
  static_assert(kRelocation == llvm::Reloc::PIC_, "compile_options() names the relocation model");
  return "module pipeline O" + std::to_string(module_pipeline().getSpeedupLevel()) + " (size level " +
         std::to_string(module_pipeline().getSizeLevel()) + "), code generator level " +
         std::to_string(static_cast<int>(kCodeGenLevel)) + ", relocation PIC, lld " + kLinkFlag;
}

std::vector<uint8_t> compile_ir(std::string_view ir, std::string_view mcpu, CompileTimes* times) {
  auto t = std::chrono::steady_clock::now();
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> module = parse(ir, context);
  CompileTimes local;
  local.parse_seconds = seconds_since(t);
  t = std::chrono::steady_clock::now();
  auto machine = make_target_machine(mcpu);
  const std::vector<char> object = emit_object(*module, *machine);
  local.llvm_seconds = seconds_since(t);
  t = std::chrono::steady_clock::now();
  std::vector<uint8_t> code_object = link_shared(object);
  local.link_seconds = seconds_since(t);
  if (times) *times = local;
  return code_object;
}

}  // namespace weft::amdgpu
