// Where a command's output goes: standard output, a device or FIFO, or a file replaced atomically.
#pragma once

#include <cstddef>
#include <span>
#include <string>

namespace hk::cli {

/// Writes `bytes` to `path` the way users expect of a command's output argument:
/// - "-" is standard output;
/// - a symbolic link is followed and its target written (a new file when the target does not
///   exist yet); the link stays;
/// - a FIFO, character or block device (/dev/stdout, /dev/null, a named pipe) is opened and written
///   in place, never replaced;
/// - a regular file, or a new one, is written to a temporary file in its directory that is then
///   renamed over it, so that it is never left half written.
/// On failure a temporary file is removed, a regular file is left as it was, and
/// hk::Error(Errc::invalid_file, subject, path, reason) is thrown.
void write_output(const std::string& path, std::span<const std::byte> bytes, const char* subject);

}  // namespace hk::cli
