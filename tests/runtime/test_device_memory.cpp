// Device::free, OwnedArray and event timing on every device family: a freed buffer cannot be
// freed again (and on the emulator, not used again), an OwnedArray frees at the end of its
// scope, and the time between two events brackets the work recorded between them.
#include <doctest/doctest.h>

#include <chrono>

#include "kernels/kernel_harness.h"
#include "weft/dsl/builder.h"

using namespace weft;

namespace {

// out[i] = in[i] * 2 for 64 * 256 elements, looped `repeat` times (work to time).
UOp doubling(int64_t repeat) {
  UOp in = placeholder({64 * 256}, dtypes::float32, 1), out = placeholder({64 * 256}, dtypes::float32, 0);
  UOp g = range(64, 0, AxisType::GLOBAL), l = range(256, 1, AxisType::LOCAL), r = range(repeat, 2, AxisType::LOOP);
  UOp i = g * 256 + l;
  return sink({"doubling"}, {out[i].store(in[i].load() * 2.0).end({r, l, g})});
}

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

double seconds_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

WEFT_DEVICE_TEST_CASE("Device::free: a freed buffer is gone, and freeing it again is an error") {
  for (const std::string& target : testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    const auto x = testing::random_floats(64 * 256);
    const auto k = rt::CompiledKernel::compile(*dev, doubling(1));
    rt::DeviceArray in = testing::put(*dev, dtypes::float32, x, "in");
    rt::DeviceArray out = testing::poisoned(*dev, dtypes::float32, 64 * 256);
    const rt::DeviceArray args[] = {out, in};
    k.launch(*dev, args);
    const auto y = testing::get<float>(*dev, out);
    for (size_t q = 0; q < y.size(); ++q) REQUIRE(y[q] == x[q] * 2.0f);
    dev->free(in.buffer);
    CHECK(error_of([&] { dev->free(in.buffer); }).find("free") != std::string::npos);
    if (target.starts_with("emu:")) {
      // Reads of the freed input are out-of-bounds accesses that name it.
      const std::string e = error_of([&] { k.launch(*dev, args); });
      INFO(e);
      CHECK(e.find("out-of-bounds global access") != std::string::npos);
      CHECK(e.find("buffer 'in'") != std::string::npos);
      CHECK(e.find("which was freed") != std::string::npos);
      CHECK(error_of([&] { testing::get<float>(*dev, in); }).find("which was freed") != std::string::npos);
    }
    dev->free(out.buffer);
  }
}

WEFT_DEVICE_TEST_CASE("OwnedArray frees its buffer at the end of its scope, once") {
  for (const std::string& target : testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    rt::DeviceArray seen;
    {
      rt::OwnedArray a(*dev, testing::poisoned(*dev, dtypes::float32, 16));
      seen = a;
      rt::OwnedArray moved = std::move(a);  // the moved-from one frees nothing
      CHECK(testing::get<float>(*dev, moved).size() == 16);
    }
    CHECK(error_of([&] { dev->free(seen.buffer); }).find("free") != std::string::npos);  // freed already
    rt::OwnedArray b(*dev, testing::poisoned(*dev, dtypes::float32, 16));
    const rt::DeviceArray held = b;
    b.reset();
    CHECK_NOTHROW(b.reset());  // nothing left to free
    CHECK(error_of([&] { dev->free(held.buffer); }).find("free") != std::string::npos);
  }
}

WEFT_DEVICE_TEST_CASE("events: the time between two events brackets the launches between them") {
  for (const std::string& target : testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    const auto k = rt::CompiledKernel::compile(*dev, doubling(8));
    const rt::OwnedArray in(*dev, testing::put(*dev, dtypes::float32, testing::random_floats(64 * 256)));
    const rt::OwnedArray out(*dev, testing::poisoned(*dev, dtypes::float32, 64 * 256));
    const rt::DeviceArray args[] = {out, in};
    k.launch(*dev, args);  // warm up
    dev->synchronize();
    const auto before = std::chrono::steady_clock::now();
    const auto start = dev->record_event();
    const auto launched = std::chrono::steady_clock::now();
    for (int i = 0; i < 3; ++i) k.launch(*dev, args);
    const auto returned = std::chrono::steady_clock::now();
    const auto end = dev->record_event();
    const double device_seconds = dev->elapsed_seconds(*start, *end);  // waits for `end`
    const auto after = std::chrono::steady_clock::now();
    CAPTURE(device_seconds);
    CHECK(device_seconds > 0);
    CHECK(device_seconds <= seconds_between(before, after));  // the events lie inside the host's interval
    // The emulator runs launches to completion, so its interval holds all three launches.
    if (target.starts_with("emu:")) CHECK(device_seconds >= seconds_between(launched, returned));
    const double timed = rt::time_on_device(*dev, [&] { k.launch(*dev, args); });
    CHECK(timed > 0);
    // An event of another device is refused.
    auto other = rt::open_device(target);
    const auto foreign = other->record_event();
    CHECK(error_of([&] { dev->elapsed_seconds(*start, *foreign); }).find("another device") != std::string::npos);
  }
}

WEFT_DEVICE_TEST_CASE("Device::copy_on_device copies the first bytes of one buffer into another, and refuses a copy past either's end") {
  for (const std::string& target : testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    const auto x = testing::random_floats(4096);
    const rt::OwnedArray src(*dev, testing::put(*dev, dtypes::float32, x, "src"));
    const rt::OwnedArray dst(*dev, testing::poisoned(*dev, dtypes::float32, 4096, "dst"));
    const rt::OwnedArray small(*dev, testing::poisoned(*dev, dtypes::float32, 16, "small"));
    dev->copy_on_device(dst.get().buffer, src.get().buffer, 1000 * 4);  // a part: the rest stays poisoned
    const auto y = testing::get<float>(*dev, dst.get());
    for (size_t q = 0; q < 1000; ++q) REQUIRE(std::memcmp(&y[q], &x[q], 4) == 0);
    for (size_t q = 1000; q < y.size(); ++q) REQUIRE(std::memcmp(&y[q], "\xCD\xCD\xCD\xCD", 4) == 0);
    CHECK(error_of([&] { dev->copy_on_device(small.get().buffer, src.get().buffer, 4096 * 4); }).find("16384 bytes") != std::string::npos);
    CHECK(error_of([&] { dev->copy_on_device(dst.get().buffer, small.get().buffer, 17 * 4); }).find("68 bytes") != std::string::npos);
  }
}
