// Internal: the report's default clock — nanoseconds on std::chrono::steady_clock's scale.
//
// A recorded range reads the clock twice, and on cloud vCPUs steady_clock::now() (clock_gettime
// through the vDSO) costs about twice a TSC read (bench/RESULTS.md). So where the kernel itself
// keeps time with the TSC (clocksource "tsc", which it chooses only for an invariant TSC
// synchronised across CPUs), the report reads the TSC and converts it with a scale measured
// against steady_clock once per process (about 2 ms, when the report's state is created).
// Readings stay on steady_clock's time line (the conversion is anchored to it, so time_origin_ns
// lines up across processes) to within the calibration's error: about 1e-5 of the time since
// calibration. Anywhere else — another clocksource, another CPU or compiler, or
// NSIGHTKIT_REPORT_CLOCK=steady in the environment — it calls steady_clock.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/text.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#if defined(__linux__) && defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define NSIGHTKIT_DETAIL_REPORT_TSC 1
#include <cpuid.h>  // small; <x86intrin.h> (all of AVX-512's intrinsics) would cost every TU
// 128-bit products for the fixed-point scale (a GCC/Clang extension; -Wpedantic accepts it so).
__extension__ typedef __int128 nsightkit_detail_i128;
__extension__ typedef unsigned __int128 nsightkit_detail_u128;
#else
#define NSIGHTKIT_DETAIL_REPORT_TSC 0
#endif

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

/// steady_clock in nanoseconds.
inline std::int64_t steady_now() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// A TSC-to-steady_clock conversion: ns = base_ns + ((tsc - tsc0) * mult) >> 32.
struct Tsc {
  bool usable{false};
  std::int64_t base_ns{0};
  std::uint64_t tsc0{0};
  std::uint64_t mult{0};  // nanoseconds per tick, 32.32 fixed point
  std::string why;        // why the TSC is not used ("" when it is)
};

#if NSIGHTKIT_DETAIL_REPORT_TSC
/// One (steady, tsc) pair: the steady reading bracketed by two TSC reads, the tightest of a few.
inline void tsc_pair(std::int64_t& ns, std::uint64_t& tsc) noexcept {
  std::uint64_t best = ~std::uint64_t{0};
  for (int i = 0; i < 8; ++i) {
    std::uint64_t const a = __builtin_ia32_rdtsc();
    std::int64_t const s = steady_now();
    std::uint64_t const b = __builtin_ia32_rdtsc();
    if (b >= a && b - a < best) {
      best = b - a;
      ns = s;
      tsc = a + (b - a) / 2;
    }
  }
}
#endif

/// Checks the CPU and kernel, then measures the TSC against steady_clock (about 2 ms).
inline void tsc_measure(Tsc& t) {
#if NSIGHTKIT_DETAIL_REPORT_TSC
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0x80000007u, &a, &b, &c, &d) == 0 || (d & (1u << 8)) == 0) {
    t.why = "the CPU has no invariant TSC";
    return;
  }
  std::string source;
  if (std::FILE* f =
          std::fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r")) {
    char word[64] = {};
    if (std::fscanf(f, "%63s", word) == 1) source = word;
    std::fclose(f);
  }
  if (source != "tsc") {
    t.why = "the kernel's clocksource is '" + source + "', not 'tsc'";
    return;
  }
  std::int64_t ns0 = 0, ns1 = 0;
  std::uint64_t tsc0 = 0, tsc1 = 0;
  tsc_pair(ns0, tsc0);
  do {  // about 2 ms between the two pairs: a scale good to about 1e-5
    tsc_pair(ns1, tsc1);
  } while (ns1 - ns0 < 2'000'000 && ns1 >= ns0);
  if (tsc1 <= tsc0 || ns1 <= ns0) {
    t.why = "the TSC did not advance with steady_clock";
    return;
  }
  auto const ticks = tsc1 - tsc0;
  auto const nanos = static_cast<std::uint64_t>(ns1 - ns0);
  t.mult = static_cast<std::uint64_t>((static_cast<nsightkit_detail_u128>(nanos) << 32) / ticks);
  t.base_ns = ns1;
  t.tsc0 = tsc1;
  t.usable = t.mult != 0;
  if (!t.usable) t.why = "the TSC runs faster than 4 GHz x 2^32";
#else
  t.why = "not an x86-64 Linux build with GCC or Clang";
#endif
}

/// What NSIGHTKIT_REPORT_CLOCK asks for: "auto" (the default: the TSC where sound), "steady"
/// (always steady_clock), "tsc" (like auto, but says why when the TSC cannot be used).
enum class ClockChoice { automatic, steady, tsc };

/// Reads NSIGHTKIT_REPORT_CLOCK; a value it does not know is named on stderr, then ignored.
inline ClockChoice clock_choice() noexcept {
  char const* env = std::getenv("NSIGHTKIT_REPORT_CLOCK");
  if (env == nullptr) return ClockChoice::automatic;
  std::string_view const v = trim(env);
  if (v.empty() || equals_word(v, "auto")) return ClockChoice::automatic;
  if (equals_word(v, "steady")) return ClockChoice::steady;
  if (equals_word(v, "tsc")) return ClockChoice::tsc;
  NSIGHTKIT_DETAIL_TRY {
    std::fprintf(stderr,
                 "nsightkit report: NSIGHTKIT_REPORT_CLOCK=%s is not one of auto, steady, tsc; "
                 "using auto\n",
                 quote_value(v).c_str());
  }
  NSIGHTKIT_DETAIL_CATCH(...) {}
  return ClockChoice::automatic;
}

/// Decides once whether the TSC may stand in for steady_clock here, and calibrates it.
inline Tsc tsc_calibrate(ClockChoice choice) noexcept {
  Tsc t;
  if (choice == ClockChoice::steady) {
    t.why = "NSIGHTKIT_REPORT_CLOCK=steady";
    return t;
  }
  NSIGHTKIT_DETAIL_TRY { tsc_measure(t); }
  NSIGHTKIT_DETAIL_CATCH(...) {
    t.usable = false;
    t.why = "out of memory while calibrating";
  }
  if (!t.usable && choice == ClockChoice::tsc) {
    std::fprintf(stderr,
                 "nsightkit report: NSIGHTKIT_REPORT_CLOCK=tsc: the TSC cannot be used here (%s); "
                 "using steady_clock\n",
                 t.why.c_str());
  }
  return t;
}

/// The conversion of this process (calibrated on first use).
inline Tsc const& process_tsc() noexcept {
  static Tsc const t = tsc_calibrate(clock_choice());
  return t;
}

/// Now, by `t` when usable, else by steady_clock.
inline std::int64_t clock_now(Tsc const& t) noexcept {
#if NSIGHTKIT_DETAIL_REPORT_TSC
  if (t.usable) {
    // Signed: a read on another CPU just before calibration's may be a few ticks earlier.
    auto const delta = static_cast<std::int64_t>(__builtin_ia32_rdtsc() - t.tsc0);
    auto const scaled =
        (static_cast<nsightkit_detail_i128>(delta) * static_cast<nsightkit_detail_i128>(t.mult)) >>
        32;
    return t.base_ns + static_cast<std::int64_t>(scaled);
  }
#else
  (void)t;
#endif
  return steady_now();
}

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
