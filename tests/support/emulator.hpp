// A server a test needs (an object-store emulator), started by the test and stopped
// with it: the command runs in its own process group, reports "listening <port>" as its
// first line on stdout, and exits when its stdin closes; the destructor closes stdin,
// waits up to 10 s, then kills the group.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace lancet::testing {

class emulator {
 public:
  explicit emulator(const std::vector<std::string>& argv, std::chrono::seconds start_timeout = std::chrono::seconds(60)) {
    int in[2], out[2];
    if (::pipe(in) != 0 || ::pipe(out) != 0) throw std::runtime_error("emulator: pipe failed");
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("emulator: fork failed");
    if (pid_ == 0) {
      ::setpgid(0, 0);
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      ::close(in[1]);
      ::close(out[0]);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execvp(args[0], args.data());
      ::_exit(127);
    }
    ::setpgid(pid_, pid_);
    ::close(in[0]);
    ::close(out[1]);
    stdin_ = in[1];
    stdout_ = out[0];
    std::string line;
    const auto deadline = std::chrono::steady_clock::now() + start_timeout;
    while (line.find('\n') == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd p{stdout_, POLLIN, 0};
      char buf[256];
      const ssize_t n = left.count() > 0 && ::poll(&p, 1, int(left.count())) > 0 ? ::read(stdout_, buf, sizeof buf) : -1;
      if (n <= 0) {
        stop();
        throw std::runtime_error("emulator '" + argv.at(0) + " " + argv.at(1) + "' did not start: " + line);
      }
      line.append(buf, std::size_t(n));
    }
    if (line.rfind("listening ", 0) != 0) {
      stop();
      throw std::runtime_error("emulator: unexpected first line: " + line);
    }
    port_ = std::stoi(line.substr(10));
  }
  ~emulator() { stop(); }
  emulator(const emulator&) = delete;
  emulator& operator=(const emulator&) = delete;

  int port() const noexcept { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  void stop() noexcept {
    if (pid_ <= 0) return;
    if (stdin_ >= 0) ::close(stdin_), stdin_ = -1;
    int status = 0;
    for (int i = 0; i < 100; ++i) {
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (pid_ > 0) {
      ::kill(-pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
    }
    if (stdout_ >= 0) ::close(stdout_), stdout_ = -1;
  }

  pid_t pid_ = -1;
  int stdin_ = -1, stdout_ = -1;
  int port_ = 0;
};

}  // namespace lancet::testing
