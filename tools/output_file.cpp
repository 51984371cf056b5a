// Where a command's output goes: standard output, a device or FIFO, or a file replaced atomically.
#include "tools/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <system_error>

#include "hetkern/error.hpp"

namespace hk::cli {
namespace {

namespace fs = std::filesystem;

// Symbolic links followed before giving up, as the kernel's own limit (ELOOP).
constexpr int max_link_hops = 40;

[[noreturn]] void fail(const char* subject, const std::string& path, const std::string& reason) {
  throw Error(Errc::invalid_file, subject, path, reason);
}

std::string errno_text(int error) { return std::system_category().message(error); }

bool write_all(int fd, const std::byte* data, std::size_t size) {
  while (size > 0) {
    const ssize_t put = ::write(fd, data, size);
    if (put < 0 && errno == EINTR) continue;
    if (put < 0) return false;
    data += put;
    size -= std::size_t(put);
  }
  return true;
}

// Standard output, a FIFO or a device: opened (through any links, /proc's included) and written.
void write_in_place(int fd, const std::string& path, std::span<const std::byte> bytes, const char* subject) {
  if (fd < 0) fail(subject, path, "cannot open: " + errno_text(errno));
  const bool written = write_all(fd, bytes.data(), bytes.size());
  const int error = errno;
  if (fd != STDOUT_FILENO && ::close(fd) != 0 && written) fail(subject, path, "cannot write: " + errno_text(errno));
  if (!written) fail(subject, path, "cannot write: " + errno_text(error));
}

// The file a chain of links ends at, for a link whose target does not exist yet (the kernel
// resolves every other case). Relative targets are relative to their link's directory.
fs::path final_target(const std::string& path, const char* subject) {
  fs::path at = path;
  for (int hop = 0;; ++hop) {
    struct stat status {};
    if (::lstat(at.c_str(), &status) != 0 || !S_ISLNK(status.st_mode)) return at;
    if (hop == max_link_hops) fail(subject, path, "too many levels of symbolic links");
    std::error_code ec;
    const fs::path next = fs::read_symlink(at, ec);
    if (ec) fail(subject, path, "cannot read the symbolic link " + at.string() + ": " + ec.message());
    at = next.is_absolute() ? next : at.parent_path() / next;
  }
}

// Into a temporary file beside `target`, then renamed over it. O_EXCL with a per-process, per-call
// name: never reuse a stale temporary or share one with a concurrent writer. A new file gets mode
// 0666 less the umask, as from a plain open(); a replaced one keeps its mode, and its owner and
// group where this process may set them, as a plain open() and write would leave them.
void replace_atomically(const fs::path& target, const std::string& path, std::span<const std::byte> bytes,
                        const char* subject, const struct stat* replaced = nullptr) {
  if (!target.has_filename()) fail(subject, path, "path names a directory, not a file");
  const fs::path directory = target.has_parent_path() ? target.parent_path() : ".";
  static std::atomic<unsigned> counter{0};
  std::string temporary;
  int fd = -1;
  for (int attempt = 0; fd < 0; ++attempt) {
    temporary = (directory / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()) + "." +
                              std::to_string(counter++)))
                    .string();
    fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && (errno != EEXIST || attempt == 100))
      fail(subject, path, "cannot create a temporary file in " + directory.string() + ": " + errno_text(errno));
  }
  const auto discard = [&](const std::string& what, int error) {
    ::unlink(temporary.c_str());
    fail(subject, path, what + ": " + errno_text(error));
  };
  if (replaced) {
    if (::fchown(fd, replaced->st_uid, replaced->st_gid) != 0 && errno != EPERM) {
      const int error = errno;
      ::close(fd);
      discard("cannot set the owner of " + temporary, error);
    }
    if (::fchmod(fd, replaced->st_mode & 07777) != 0) {
      const int error = errno;
      ::close(fd);
      discard("cannot set the mode of " + temporary, error);
    }
  }
  const bool written = write_all(fd, bytes.data(), bytes.size());
  const int write_error = errno;
  if (::close(fd) != 0 && written) discard("cannot write " + temporary, errno);
  if (!written) discard("cannot write " + temporary, write_error);
  if (::rename(temporary.c_str(), target.c_str()) != 0)
    discard("cannot rename the temporary file over " + target.string(), errno);
}

}  // namespace

void write_output(const std::string& path, std::span<const std::byte> bytes, const char* subject) {
  if (path == "-") {
    write_in_place(STDOUT_FILENO, path, bytes, subject);
    return;
  }
  struct stat status {};
  if (::stat(path.c_str(), &status) == 0) {
    if (S_ISDIR(status.st_mode)) fail(subject, path, "is a directory, not a file");
    if (!S_ISREG(status.st_mode)) {
      write_in_place(::open(path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC), path, bytes, subject);
      return;
    }
    // A regular file, perhaps behind links: replace the file itself, keep the links. Only where a
    // plain open() for writing would be allowed: a read-only file stays as it is.
    if (::faccessat(AT_FDCWD, path.c_str(), W_OK, AT_EACCESS) != 0) fail(subject, path, "cannot write: " + errno_text(errno));
    std::error_code ec;
    const fs::path target = fs::canonical(path, ec);
    if (ec) fail(subject, path, "cannot resolve: " + ec.message());
    replace_atomically(target, path, bytes, subject, &status);
    return;
  }
  if (errno != ENOENT) fail(subject, path, "cannot stat: " + errno_text(errno));
  replace_atomically(final_target(path, subject), path, bytes, subject);
}

}  // namespace hk::cli
