// Compiled into every executable of a WEFT_SANITIZE build (CMakeLists.txt, weft_flags): the
// sanitizer options those programs start with, before any ASAN_OPTIONS from the environment.
//
// intercept_tls_get_addr=0: up to GCC 13 (Debian 12 ships 12), the runtime's __tls_get_addr
// interceptor takes a dynamic TLS block whose address is 16 bytes past a page boundary for one
// with glibc 2.19's header and reads the two words before it as the block's range. Since glibc
// 2.25 there is no such header, so when a block lands there by chance (programs that load NVRTC
// have them) LeakSanitizer's tracer scans a garbage range at exit and dies with "Tracer caught
// signal 11" after the program itself passed: a flaky failure, not a leak (CI saw it once, on an
// NVRTC test). What the option gives up: the thread-local storage of dlopen'ed libraries is no
// longer a root of the leak check; weft keeps no allocation only there.
extern "C" const char* __asan_default_options() { return "intercept_tls_get_addr=0"; }
