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
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace resnet {
namespace {
namespace nsk = nsightkit;
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

/// What a transfer belongs to. Its text is built only for an error message.
struct Op {
  char const* kind;                   // "allreduce", "hello", …
  std::string const* label{nullptr};  // the collective's label, if any
  std::uint64_t call{0};
  std::size_t bytes{0};
};

std::string op_text(Op const& op) {
  if (op.label == nullptr) return op.kind;
  return std::string{op.kind} + " " + *op.label + " (call " + std::to_string(op.call) + ", " +
         std::to_string(op.bytes) + " bytes)";
}

class HostCommunicator final : public Communicator {
 public:
  HostCommunicator(World const& w, CommOptions const& o) : ctx_{w, o} {
    if (ctx_.world().rank == 0) {
      serve();
    } else {
      join_group();
    }
  }

  [[nodiscard]] std::string describe() const override {
    return "loopback TCP through rank 0 (CPU), " + std::to_string(ctx_.world().size) + " ranks";
  }

  void all_reduce_mean(float* data, std::size_t count, std::string const& label) override {
    std::size_t const bytes = count * sizeof(float);
    nsk::ScopedRange const range{nsk::Attributes{nsk::Payload{bytes}}, "allreduce {}", label};
    Header const mine{++calls_, count};
    Op const op{"allreduce", &label, mine.call, bytes};
    int const size = ctx_.world().size;
    if (ctx_.world().rank != 0) {
      send_all(root_, &mine, sizeof mine, 0, op);
      send_all(root_, data, bytes, 0, op);
      receive_header(root_, mine, 0, op);
      receive_all(root_, data, bytes, 0, op);
      return;
    }
    // Rank 0: sum in rank order (the same result on every run), then send the mean back.
    sum_.assign(data, data + count);
    incoming_.resize(count);
    for (int r = 1; r < size; ++r) {
      Socket const& s = peers_[static_cast<std::size_t>(r)];
      receive_header(s, mine, r, op);
      receive_all(s, incoming_.data(), bytes, r, op);
      for (std::size_t i = 0; i < count; ++i) sum_[i] += incoming_[i];
    }
    auto const n = static_cast<float>(size);
    for (std::size_t i = 0; i < count; ++i) data[i] = sum_[i] / n;
    for (int r = 1; r < size; ++r) {
      Socket const& s = peers_[static_cast<std::size_t>(r)];
      send_all(s, &mine, sizeof mine, r, op);
      send_all(s, data, bytes, r, op);
    }
  }

  void join() override {}  // the CPU backend is synchronous: reductions are done when they return

  void watchdog(double) override {}  // every socket wait is bounded by itself

 private:
  static constexpr char const* kPortFile = "host-port";

  void serve() {
    int const size = ctx_.world().size;
    Socket listener{::socket(AF_INET, SOCK_STREAM, 0)};
    if (listener.fd() < 0) ctx_.fail(std::string{"socket(): "} + std::strerror(errno));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;  // any free port: published below
    if (::bind(listener.fd(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listener.fd(), size) != 0) {
      ctx_.fail(std::string{"cannot listen on loopback: "} + std::strerror(errno));
    }
    socklen_t len = sizeof addr;
    ::getsockname(listener.fd(), reinterpret_cast<sockaddr*>(&addr), &len);
    std::uint16_t const port = ntohs(addr.sin_port);
    ctx_.publish(kPortFile, &port, sizeof port);
    peers_.resize(static_cast<std::size_t>(size));
    auto const t0 = std::chrono::steady_clock::now();
    for (int joined = 1; joined < size;) {
      pollfd p{listener.fd(), POLLIN, 0};
      double const left = ctx_.options().timeout_s - RankContext::seconds_since(t0);
      if (left <= 0 || ::poll(&p, 1, static_cast<int>(left * 1000) + 1) == 0) {
        std::string missing;
        for (int r = 1; r < size; ++r)
          if (peers_[static_cast<std::size_t>(r)].fd() < 0) missing += " " + std::to_string(r);
        ctx_.fail("rank(s)" + missing + " did not connect within " + ctx_.timeout_text() +
                  " (did they start? a rank that fails at start-up is reported by the launcher)");
      }
      Socket s{::accept(listener.fd(), nullptr, nullptr)};
      if (s.fd() < 0) continue;
      std::int32_t rank = -1;
      receive_all(s, &rank, sizeof rank, -1, Op{"the hello of a connecting rank"});
      if (rank <= 0 || rank >= size || peers_[static_cast<std::size_t>(rank)].fd() >= 0) {
        ctx_.fail("a connecting process said it is rank " + std::to_string(rank) +
                  ", which is not a free rank of " + std::to_string(size) +
                  " (two runs sharing one NSIGHTKIT_RENDEZVOUS?)");
      }
      tune(s);
      peers_[static_cast<std::size_t>(rank)] = std::move(s);
      ++joined;
    }
  }

  void join_group() {
    std::uint16_t port = 0;
    ctx_.wait_for(kPortFile, &port, sizeof port, "its port");
    auto const t0 = std::chrono::steady_clock::now();
    for (;;) {
      Socket s{::socket(AF_INET, SOCK_STREAM, 0)};
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      addr.sin_port = htons(port);
      if (::connect(s.fd(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
        root_ = std::move(s);
        break;
      }
      if (ctx_.timed_out(t0)) {
        ctx_.fail("cannot connect to rank 0 on port " + std::to_string(port) + ": " +
                  std::strerror(errno));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    tune(root_);
    auto const rank = static_cast<std::int32_t>(ctx_.world().rank);
    send_all(root_, &rank, sizeof rank, 0, Op{"hello"});
  }

  static void tune(Socket const& s) {
    int one = 1;
    ::setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }

  static std::string peer_name(int peer) {
    return peer < 0 ? std::string{"a connecting rank"} : "rank " + std::to_string(peer);
  }

  /// Waits until `s` is ready for `events`, at most the timeout.
  void wait_ready(Socket const& s, short events, int peer, Op const& op) const {
    pollfd p{s.fd(), events, 0};
    int const r = ::poll(&p, 1, static_cast<int>(ctx_.options().timeout_s * 1000));
    if (r == 0) {
      ctx_.fail("no progress from " + peer_name(peer) + " for " + ctx_.timeout_text() + " during " +
                op_text(op) + " (it stalled, or is out of step with this rank)");
    }
    if (r < 0 && errno != EINTR) ctx_.fail(std::string{"poll(): "} + std::strerror(errno));
  }

  void send_all(Socket const& s, void const* data, std::size_t bytes, int peer,
                Op const& op) const {
    auto const* p = static_cast<char const*>(data);
    while (bytes > 0) {
      wait_ready(s, POLLOUT, peer, op);
      ssize_t const n = ::send(s.fd(), p, bytes, MSG_NOSIGNAL);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        ctx_.fail("lost " + peer_name(peer) + " during " + op_text(op) + ": " +
                  std::strerror(errno) + " (it exited or crashed)");
      }
      p += n;
      bytes -= static_cast<std::size_t>(n);
    }
  }

  void receive_all(Socket const& s, void* data, std::size_t bytes, int peer, Op const& op) const {
    auto* p = static_cast<char*>(data);
    while (bytes > 0) {
      wait_ready(s, POLLIN, peer, op);
      ssize_t const n = ::recv(s.fd(), p, bytes, 0);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        ctx_.fail(peer_name(peer) + " closed its connection during " + op_text(op) +
                  " (it exited or crashed)");
      }
      p += n;
      bytes -= static_cast<std::size_t>(n);
    }
  }

  void receive_header(Socket const& s, Header const& mine, int peer, Op const& op) const {
    Header h{};
    receive_all(s, &h, sizeof h, peer, op);
    if (h.call != mine.call || h.count != mine.count) {
      ctx_.fail(peer_name(peer) + " is out of step: its call " + std::to_string(h.call) +
                " reduces " + std::to_string(h.count) + " floats where this rank's " + op_text(op) +
                " reduces " + std::to_string(mine.count) +
                " (do all ranks run the same model and flags?)");
    }
  }

  RankContext ctx_;
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
