// The host thread pool: every task runs exactly once, errors come back, the pool is reusable.
#include "catch.hpp"

#include "cml/host_pool.hpp"

#include <atomic>
#include <stdexcept>
#include <vector>

TEST_CASE("the host pool runs every task exactly once", "[cpu][pool]") {
  cml::HostPool pool(3);
  CHECK(pool.width() == 4);
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{4}, std::size_t{1000}}) {
    std::vector<std::atomic<int>> runs(n);
    pool.run(n, [&](std::size_t i) { ++runs[i]; });
    for (std::size_t i = 0; i < n; ++i) CHECK(runs[i].load() == 1);
  }
}

TEST_CASE("a task's exception reaches the caller after all tasks finished", "[cpu][pool]") {
  cml::HostPool pool(2);
  std::atomic<int> finished{0};
  CHECK_THROWS_AS(pool.run(50,
                           [&](std::size_t i) {
                             ++finished;
                             if (i == 7) throw std::runtime_error("task 7");
                           }),
                  std::runtime_error);
  CHECK(finished.load() == 50);
  std::atomic<int> again{0};
  pool.run(10, [&](std::size_t) { ++again; });  // still usable
  CHECK(again.load() == 10);
}

TEST_CASE("the shared pool is there and has at least the caller", "[cpu][pool]") {
  CHECK(cml::host_pool().width() >= 1);
}
