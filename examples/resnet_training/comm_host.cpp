// The CPU backend's communicator: the ranks connect to rank 0 over loopback TCP (rank 0 publishes
// its port in the rendezvous directory); an all-reduce sends every rank's buffer to rank 0,
// which sums in rank order and sends the mean back. Simple and deterministic, not fast: it lets
// data-parallel training, its fault handling and its instrumentation run without GPUs.
#include "distributed.hpp"

#include <nsightkit/range.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace resnet {
namespace {
namespace nsk = nsightkit;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// An owned socket.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) noexcept : fd_{fd} {}
  Socket(Socket&& o) noexcept : fd_{o.fd_} { o.fd_ = -1; }
  Socket& operator=(Socket&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = o.fd_;
      o.fd_ = -1;
    }
    return *this;
  }
  Socket(Socket const&) = delete;
  Socket& operator=(Socket const&) = delete;
  ~Socket() { reset(); }
  [[nodiscard]] int fd() const noexcept { return fd_; }
  void reset() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_{-1};
};

/// A message's header: which collective (call number) and how many floats, so ranks that are
/// out of step are caught instead of summing unrelated buffers.
struct Header {
  std::uint64_t call;
  std::uint64_t count;
};

class HostCommunicator final : public Communicator {
 public:
  HostCommunicator(World const& w, CommOptions const& o) : world_{w}, options_{o} {
    if (world_.rank == 0) {
      serve();
    } else {
      join_group();
    }
  }

  [[nodiscard]] std::string describe() const override {
    return "loopback TCP through rank 0 (CPU), " + std::to_string(world_.size) + " ranks";
  }

  void all_reduce_mean(float* data, std::size_t count, std::string const& label) override {
    std::size_t const bytes = count * sizeof(float);
    nsk::ScopedRange const range{nsk::Attributes{nsk::Payload{bytes}}, "allreduce {}", label};
    Header const mine{++calls_, count};
    std::string const what = "allreduce " + label + " (call " + std::to_string(mine.call) + ", " +
                             std::to_string(bytes) + " bytes)";
    if (world_.rank != 0) {
      send_all(root_, &mine, sizeof mine, 0, what);
      send_all(root_, data, bytes, 0, what);
      receive_header(root_, mine, 0, what);
      receive_all(root_, data, bytes, 0, what);
      return;
    }
    // Rank 0: sum in rank order (the same result on every run), then send the mean back.
    sum_.assign(data, data + count);
    incoming_.resize(count);
    for (int r = 1; r < world_.size; ++r) {
      Socket const& s = peers_[static_cast<std::size_t>(r)];
      receive_header(s, mine, r, what);
      receive_all(s, incoming_.data(), bytes, r, what);
      for (std::size_t i = 0; i < count; ++i) sum_[i] += incoming_[i];
    }
    auto const n = static_cast<float>(world_.size);
    for (std::size_t i = 0; i < count; ++i) data[i] = sum_[i] / n;
    for (int r = 1; r < world_.size; ++r) {
      Socket const& s = peers_[static_cast<std::size_t>(r)];
      send_all(s, &mine, sizeof mine, r, what);
      send_all(s, data, bytes, r, what);
    }
  }

  void join() override {}  // the CPU backend is synchronous: reductions are done when they return

  void watchdog(double) override {}  // every socket wait is bounded by itself

 private:
  [[noreturn]] void fail(std::string const& message) const {
    throw std::runtime_error("rank " + std::to_string(world_.rank) + ": " + message);
  }

  std::string port_file() const { return world_.rendezvous + "/host-port"; }

  void serve() {
    Socket listener{::socket(AF_INET, SOCK_STREAM, 0)};
    if (listener.fd() < 0) fail(std::string{"socket(): "} + std::strerror(errno));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;  // any free port: published below
    if (::bind(listener.fd(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listener.fd(), world_.size) != 0) {
      fail(std::string{"cannot listen on loopback: "} + std::strerror(errno));
    }
    socklen_t len = sizeof addr;
    ::getsockname(listener.fd(), reinterpret_cast<sockaddr*>(&addr), &len);
    {
      // Written then renamed: a rank never reads half a file.
      std::string const tmp = port_file() + ".tmp";
      std::ofstream f{tmp};
      f << ntohs(addr.sin_port) << "\n";
      f.close();
      if (!f || std::rename(tmp.c_str(), port_file().c_str()) != 0) {
        fail("cannot write " + port_file() +
             " (NSIGHTKIT_RENDEZVOUS must be a writable directory)");
      }
    }
    peers_.resize(static_cast<std::size_t>(world_.size));
    auto const t0 = Clock::now();
    for (int joined = 1; joined < world_.size;) {
      pollfd p{listener.fd(), POLLIN, 0};
      double const left = options_.timeout_s - seconds_since(t0);
      if (left <= 0 || ::poll(&p, 1, static_cast<int>(left * 1000) + 1) == 0) {
        std::string missing;
        for (int r = 1; r < world_.size; ++r)
          if (peers_[static_cast<std::size_t>(r)].fd() < 0) missing += " " + std::to_string(r);
        fail("rank(s)" + missing + " did not connect within " + timeout_text() +
             " (did they start? a rank that fails at start-up is reported by the launcher)");
      }
      Socket s{::accept(listener.fd(), nullptr, nullptr)};
      if (s.fd() < 0) continue;
      std::int32_t rank = -1;
      receive_all(s, &rank, sizeof rank, -1, "the hello of a connecting rank");
      if (rank <= 0 || rank >= world_.size || peers_[static_cast<std::size_t>(rank)].fd() >= 0) {
        fail("a connecting process said it is rank " + std::to_string(rank) +
             ", which is not a free rank of " + std::to_string(world_.size) +
             " (two runs sharing one NSIGHTKIT_RENDEZVOUS?)");
      }
      tune(s);
      peers_[static_cast<std::size_t>(rank)] = std::move(s);
      ++joined;
    }
  }

  void join_group() {
    auto const t0 = Clock::now();
    int port = -1;
    while (port < 0) {
      std::ifstream f{port_file()};
      if (f >> port) break;
      port = -1;
      if (seconds_since(t0) > options_.timeout_s) {
        fail("rank 0 did not publish its port in " + port_file() + " within " + timeout_text() +
             " (did rank 0 start?)");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    for (;;) {
      Socket s{::socket(AF_INET, SOCK_STREAM, 0)};
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      addr.sin_port = htons(static_cast<std::uint16_t>(port));
      if (::connect(s.fd(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
        root_ = std::move(s);
        break;
      }
      if (seconds_since(t0) > options_.timeout_s) {
        fail("cannot connect to rank 0 on port " + std::to_string(port) + ": " +
             std::strerror(errno));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    tune(root_);
    auto const rank = static_cast<std::int32_t>(world_.rank);
    send_all(root_, &rank, sizeof rank, 0, "hello");
  }

  static void tune(Socket const& s) {
    int one = 1;
    ::setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }

  std::string timeout_text() const {
    return std::to_string(static_cast<long long>(options_.timeout_s)) + " s (--dist-timeout)";
  }

  std::string peer_name(int peer) const {
    return peer < 0 ? std::string{"a connecting rank"} : "rank " + std::to_string(peer);
  }

  /// Waits until `s` is ready for `events`, at most the timeout.
  void wait_ready(Socket const& s, short events, int peer, std::string const& what) const {
    pollfd p{s.fd(), events, 0};
    int const r = ::poll(&p, 1, static_cast<int>(options_.timeout_s * 1000));
    if (r == 0) {
      fail("no progress from " + peer_name(peer) + " for " + timeout_text() + " during " + what +
           " (it stalled, or is out of step with this rank)");
    }
    if (r < 0 && errno != EINTR) fail(std::string{"poll(): "} + std::strerror(errno));
  }

  void send_all(Socket const& s, void const* data, std::size_t bytes, int peer,
                std::string const& what) const {
    auto const* p = static_cast<char const*>(data);
    while (bytes > 0) {
      wait_ready(s, POLLOUT, peer, what);
      ssize_t const n = ::send(s.fd(), p, bytes, MSG_NOSIGNAL);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        fail("lost " + peer_name(peer) + " during " + what + ": " + std::strerror(errno) +
             " (it exited or crashed)");
      }
      p += n;
      bytes -= static_cast<std::size_t>(n);
    }
  }

  void receive_all(Socket const& s, void* data, std::size_t bytes, int peer,
                   std::string const& what) const {
    auto* p = static_cast<char*>(data);
    while (bytes > 0) {
      wait_ready(s, POLLIN, peer, what);
      ssize_t const n = ::recv(s.fd(), p, bytes, 0);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        fail(peer_name(peer) + " closed its connection during " + what + " (it exited or crashed)");
      }
      p += n;
      bytes -= static_cast<std::size_t>(n);
    }
  }

  void receive_header(Socket const& s, Header const& mine, int peer, std::string const& what) {
    Header h{};
    receive_all(s, &h, sizeof h, peer, what);
    if (h.call != mine.call || h.count != mine.count) {
      fail(peer_name(peer) + " is out of step: its call " + std::to_string(h.call) + " reduces " +
           std::to_string(h.count) + " floats where this rank's " + what + " reduces " +
           std::to_string(mine.count) + " (do all ranks run the same model and flags?)");
    }
  }

  World world_;
  CommOptions options_;
  std::uint64_t calls_{0};
  Socket root_;                // ranks > 0: the connection to rank 0
  std::vector<Socket> peers_;  // rank 0: the connection to each other rank
  std::vector<float> sum_, incoming_;
};

}  // namespace

std::unique_ptr<Communicator> make_host_communicator(World const& world, CommOptions const& o) {
  return std::make_unique<HostCommunicator>(world, o);
}

}  // namespace resnet
