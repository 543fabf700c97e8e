// Allocation-failure injection for tests of the C-entry barrier.
//
// A test program linked with the rdma_alloc_fail library replaces the
// global operator new/new[] (every form). Armed with fail_after(n), the
// n+1-th allocation from then on fails: the throwing forms throw
// std::bad_alloc, the nothrow forms return nullptr. The libraries under
// test bind to these replacements (the program exports them), so failures
// reach allocations deep inside exported functions.
//
// sweep() runs a call once per allocation it makes, failing each one in
// turn, until a run completes with no injected failure.
#pragma once

#include <cstddef>
#include <functional>

namespace rdma::allocfail {

// Arm: allow `n` more allocations, fail the next one (and only that one).
void fail_after(std::size_t n);
// Disarm; true when an armed failure was injected since the last fail_after.
bool disarm();
// Allocations served since the process started (whatever the arming).
std::size_t allocations();

// Calls `attempt(injected)` for n = 0, 1, 2, ... with allocation n failing.
// `attempt` runs the exported function under test and checks its result;
// its argument is a function telling whether the failure was injected in
// this run (then the result must be the documented error) or not (then it
// must be success). The sweep ends at the first run without injection and
// returns the number of runs, or 0 if `max_runs` was reached first.
std::size_t sweep(const std::function<void(const std::function<bool()>& injected)>& attempt,
                  std::size_t max_runs = 20000);

}  // namespace rdma::allocfail

// For GoogleTest bodies that cancel a thread.
// AddressSanitizer cannot follow a cancelled thread's forced unwinding: the
// frames it skips stay poisoned, and it reports the next thread that reuses
// the stack (buildlib/dev test --sanitize). Cancellation is tested without it.
#if defined(__SANITIZE_ADDRESS__)
#define SKIP_UNDER_ASAN_CANCEL() GTEST_SKIP() << "thread cancellation under AddressSanitizer"
#else
#define SKIP_UNDER_ASAN_CANCEL() (void)0
#endif
