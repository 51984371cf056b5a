// numpy .npy reader and writer. The reader treats every file as hostile: all lengths are checked
// against the real file size before anything is allocated or read, and the header is parsed by a
// small recursive-descent parser for the Python literals numpy writes, never evaluated.
#include "tools/npy.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <string_view>
#include <system_error>
#include <utility>

#include "bench/printable.hpp"
#include "hetkern/error.hpp"
#include "tools/output_file.hpp"

namespace hk::npy {
namespace {

// Element bytes are handed over as stored, and '=' is read as '<'; both assume a little-endian
// host.
static_assert(std::endian::native == std::endian::little,
              "the .npy reader assumes a little-endian host");

constexpr std::string_view magic = "\x93NUMPY";
constexpr std::size_t version_size = 2;
// The first bytes of every file: magic, version and the longest (version 2 and 3) header length.
constexpr std::size_t max_fixed_prefix = magic.size() + version_size + 4;
constexpr std::size_t array_align = 64;
// Bounds the header parser's recursion; numpy's own headers nest at most a few levels.
constexpr int max_nesting = 16;

[[noreturn]] void fail(const std::string& name, std::string rule) {
  throw Error(Errc::invalid_file, "npy", name, std::move(rule));
}

std::string errno_text(int error) {
  return std::system_category().message(error);
}

// Header text quoted in messages is cut short: a hostile header can be gigabytes long.
// The start of a header's text for a message, made printable.
std::string excerpt(std::string_view text) {
  constexpr std::size_t limit = 60;
  const std::string out = bench::printable(text.substr(0, limit));
  return text.size() <= limit ? out : out + "...";
}

// ---- Header: a Python dict literal

struct Value {
  enum class Kind { string, integer, identifier, tuple, list };
  Kind kind = Kind::identifier;
  std::string_view text;     // the literal as written, for messages
  std::string_view token;    // string contents, integer with sign, or identifier
  std::vector<Value> items;  // elements of a tuple or list
};

using Entries = std::vector<std::pair<std::string_view, Value>>;

class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& name) : text_(text), name_(name) {}

  Entries parse_dict() {
    skip_space();
    if (!consume('{'))
      fail(name_, "header is not a Python dict literal: it starts with '" +
                      excerpt(text_.substr(pos_, 20)) + "'");
    Entries entries;
    skip_space();
    while (!consume('}')) {
      Value key = parse_value(0);
      if (key.kind != Value::Kind::string)
        fail(name_, "header dict keys must be strings, found " + excerpt(key.text));
      skip_space();
      expect(':', "':' after a key");
      entries.emplace_back(key.token, parse_value(0));
      skip_space();
      if (consume('}')) break;
      expect(',', "',' or '}' after a value");
      skip_space();
    }
    skip_space();
    if (pos_ != text_.size()) syntax_error("the end of the header after the dict");
    return entries;
  }

 private:
  Value parse_value(int depth) {
    if (depth > max_nesting)
      fail(name_, "header nests values more than " + std::to_string(max_nesting) + " levels deep");
    skip_space();
    if (pos_ == text_.size()) syntax_error("a value");
    const std::size_t start = pos_;
    const char c = text_[pos_];
    Value value;
    if (c == '\'' || c == '"') {
      value.kind = Value::Kind::string;
      value.token = scan_string(c);
    } else if (c == '-' || c == '+' || is_digit(c)) {
      value.kind = Value::Kind::integer;
      if (!is_digit(c)) ++pos_;
      if (pos_ == text_.size() || !is_digit(text_[pos_])) syntax_error("digits");
      while (pos_ < text_.size() && is_digit(text_[pos_])) ++pos_;
      value.token = text_.substr(start, pos_ - start);
    } else if (is_identifier_start(c)) {
      value.kind = Value::Kind::identifier;
      while (pos_ < text_.size() && (is_identifier_start(text_[pos_]) || is_digit(text_[pos_])))
        ++pos_;
      value.token = text_.substr(start, pos_ - start);
    } else if (c == '(' || c == '[') {
      const char close = c == '(' ? ')' : ']';
      value.kind = c == '(' ? Value::Kind::tuple : Value::Kind::list;
      ++pos_;
      bool comma_after_last = false;
      skip_space();
      while (!consume(close)) {
        value.items.push_back(parse_value(depth + 1));
        skip_space();
        comma_after_last = false;
        if (consume(close)) break;
        expect(',', std::string("',' or '") + close + "' in a sequence");
        comma_after_last = true;
        skip_space();
      }
      // In Python "(5)" is just 5 in parentheses; only "(5,)" is a tuple.
      if (value.kind == Value::Kind::tuple && value.items.size() == 1 && !comma_after_last) {
        Value inner = std::move(value.items.front());
        inner.text = text_.substr(start, pos_ - start);
        return inner;
      }
    } else {
      syntax_error("a value");
    }
    value.text = text_.substr(start, pos_ - start);
    return value;
  }

  // Returns the contents between the quotes; escapes are skipped over, not decoded, since no
  // accepted descr or key contains one.
  std::string_view scan_string(char quote) {
    const std::size_t first = ++pos_;
    while (pos_ < text_.size() && text_[pos_] != quote) pos_ += text_[pos_] == '\\' ? 2 : 1;
    if (pos_ >= text_.size()) syntax_error(std::string("a closing ") + quote);
    return text_.substr(first, pos_++ - first);
  }

  static bool is_digit(char c) { return c >= '0' && c <= '9'; }
  static bool is_identifier_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  }

  void skip_space() {
    while (pos_ < text_.size() &&
           std::string_view(" \t\n\r\f\v").find(text_[pos_]) != std::string_view::npos)
      ++pos_;
  }

  bool consume(char c) {
    if (pos_ == text_.size() || text_[pos_] != c) return false;
    ++pos_;
    return true;
  }

  void expect(char c, const std::string& what) {
    if (!consume(c)) syntax_error(what);
  }

  [[noreturn]] void syntax_error(const std::string& expected) {
    fail(name_, "malformed header dict: expected " + expected + " at header offset " +
                    std::to_string(pos_) + " in \"" + excerpt(text_) + "\"");
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  const std::string& name_;
};

// ---- Header: meaning of the dict

// The dtype codes hetkern reads and writes, without their byte-order character.
struct TypeCode {
  std::string_view code;
  DataType type;
};
constexpr TypeCode type_codes[] = {
    {"f2", DataType::float16}, {"f4", DataType::float32}, {"f8", DataType::float64},
    {"i1", DataType::int8},    {"u1", DataType::uint8},   {"i4", DataType::int32},
    {"u4", DataType::uint32},  {"i8", DataType::int64},   {"u8", DataType::uint64},
};

DataType data_type_of(const Value& descr, const std::string& name) {
  if (descr.kind == Value::Kind::list)
    fail(name, "structured dtypes are not supported (descr " + excerpt(descr.text) + ")");
  if (descr.kind != Value::Kind::string)
    fail(name, "'descr' must be a string, found " + excerpt(descr.text));
  const std::string_view text = descr.token;
  const std::string quoted = "'" + excerpt(text) + "'";
  const bool has_order =
      !text.empty() && std::string_view("<>|=").find(text[0]) != std::string_view::npos;
  const char order = has_order ? text[0] : '\0';
  const std::string_view code = has_order ? text.substr(1) : text;

  if (code.starts_with('O')) fail(name, "object arrays are not supported (descr " + quoted + ")");
  if (code == "b1" || code == "?")
    fail(name, "bool arrays are not supported (descr " + quoted + ")");
  const auto* found = std::find_if(std::begin(type_codes), std::end(type_codes),
                                   [&](const TypeCode& c) { return c.code == code; });
  if (found == std::end(type_codes))
    fail(name,
         "unsupported dtype descr " + quoted +
             " (supported: <f2 <f4 <f8 |i1 |u1 <i4 <u4 <i8 <u8)");
  // Byte order means nothing for one-byte types; numpy writes '|' but accepts any.
  if (size_of(found->type) > 1) {
    if (order == '>') fail(name, "big-endian data is not supported (descr " + quoted + ")");
    if (order != '<' && order != '=')
      fail(name, "descr " + quoted + " does not give a byte order; expected '<" +
                     std::string(code) + "'");
  }
  return found->type;
}

struct Header {
  TensorDesc desc;
  std::uint64_t data_bytes = 0;
};

Header interpret(const Entries& entries, const std::string& name) {
  const Value* descr = nullptr;
  const Value* fortran_order = nullptr;
  const Value* shape = nullptr;
  for (const auto& [key, value] : entries) {
    const Value** slot = key == "descr"           ? &descr
                         : key == "fortran_order" ? &fortran_order
                         : key == "shape"         ? &shape
                                                  : nullptr;
    if (!slot) fail(name, "unexpected key '" + excerpt(key) + "' in header");
    if (*slot) fail(name, "duplicate key '" + std::string(key) + "' in header");
    *slot = &value;
  }
  for (auto [value, key] : {std::pair{descr, "descr"}, std::pair{fortran_order, "fortran_order"},
                            std::pair{shape, "shape"}})
    if (!value) fail(name, std::string("header is missing the '") + key + "' key");

  const DataType dtype = data_type_of(*descr, name);

  if (fortran_order->kind != Value::Kind::identifier ||
      (fortran_order->token != "True" && fortran_order->token != "False"))
    fail(name, "'fortran_order' must be True or False, found " + excerpt(fortran_order->text));
  const bool fortran = fortran_order->token == "True";

  const std::string shape_text = excerpt(shape->text);
  if (shape->kind != Value::Kind::tuple)
    fail(name, "malformed shape " + shape_text + ": expected a tuple of integers such as (3, 4)");
  if (shape->items.size() > std::size_t(max_rank))
    fail(name, "rank " + std::to_string(shape->items.size()) + " exceeds the maximum of " +
                   std::to_string(max_rank) + " (shape " + shape_text + ")");
  std::vector<std::int64_t> sizes;
  for (const Value& item : shape->items) {
    if (item.kind != Value::Kind::integer)
      fail(name,
           "malformed shape " + shape_text + ": " + excerpt(item.text) + " is not an integer");
    const bool negative = item.token.front() == '-';
    const bool has_sign = negative || item.token.front() == '+';
    const std::string_view digits = item.token.substr(has_sign ? 1 : 0);
    if (negative && digits.find_first_not_of('0') != std::string_view::npos)
      fail(name, "negative dimension " + excerpt(item.token) + " in shape " + shape_text);
    std::int64_t size = 0;  // the parser let through only digits, so only the range can fail
    if (std::from_chars(digits.data(), digits.data() + digits.size(), size).ec != std::errc())
      fail(name, "dimension " + excerpt(item.token) + " in shape is too large");
    if (size == 0) fail(name, "zero-size arrays are not supported (shape " + shape_text + ")");
    sizes.push_back(size);
  }
  std::int64_t data_bytes = std::int64_t(size_of(dtype));
  for (std::int64_t size : sizes)
    if (__builtin_mul_overflow(data_bytes, size, &data_bytes))
      fail(name, "total byte size of shape " + shape_text + " overflows 64 bits");

  // Fortran order stores the first dimension fastest: a strided view, the data stays as stored.
  std::vector<std::int64_t> strides;
  if (fortran) {
    std::int64_t running = 1;
    for (std::int64_t size : sizes) {
      strides.push_back(running);
      running *= size;  // cannot overflow: the byte size above did not
    }
  }
  return {TensorDesc(dtype, sizes, strides), std::uint64_t(data_bytes)};
}

// ---- File layout

std::string_view as_chars(std::span<const std::byte> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// Checks magic and version in the first bytes of a file of file_size bytes (`start` holds the first
// min(file_size, max_fixed_prefix) of them) and returns the size of the whole preamble: magic,
// version, header length and header.
std::uint64_t preamble_size(std::span<const std::byte> start, std::uint64_t file_size,
                            const std::string& name) {
  const std::string_view chars = as_chars(start);
  if (chars.substr(0, magic.size()) != magic.substr(0, chars.size()))
    fail(name, "not a .npy file: bad magic (expected \\x93NUMPY)");
  if (file_size < magic.size() + version_size)
    fail(name, "file ends inside the .npy preamble after " + std::to_string(file_size) + " bytes");
  const unsigned major = std::uint8_t(chars[6]), minor = std::uint8_t(chars[7]);
  if (major < 1 || major > 3 || minor != 0)
    fail(name, "unsupported .npy format version " + std::to_string(major) + "." +
                   std::to_string(minor) + " (supported: 1.0, 2.0, 3.0)");
  const std::size_t length_size = major == 1 ? 2 : 4;
  const std::size_t fixed = magic.size() + version_size + length_size;
  if (file_size < fixed)
    fail(name, "file ends inside the .npy preamble after " + std::to_string(file_size) + " bytes");
  std::uint64_t header_length = 0;
  for (std::size_t i = 0; i < length_size; ++i)
    header_length |= std::uint64_t(std::uint8_t(chars[8 + i])) << (8 * i);
  if (header_length > file_size - fixed)
    fail(name, "header length " + std::to_string(header_length) + " exceeds the file size of " +
                   std::to_string(file_size) + " bytes");
  return fixed + header_length;
}

Header parse_header(std::span<const std::byte> preamble, const std::string& name) {
  const std::size_t length_size = std::uint8_t(preamble[6]) == 1 ? 2 : 4;
  const std::string_view header =
      as_chars(preamble).substr(magic.size() + version_size + length_size);
  return interpret(HeaderParser(header, name).parse_dict(), name);
}

void check_data_size(const Header& header, std::uint64_t present, const std::string& name) {
  const std::string expected =
      std::to_string(header.data_bytes) + " data bytes for " + header.desc.to_string();
  if (present < header.data_bytes)
    fail(name, "file is truncated: expected " + expected + ", found " + std::to_string(present));
  if (present > header.data_bytes)
    fail(name, "file has " + std::to_string(present - header.data_bytes) +
                   " trailing bytes after the " + expected);
}

// ---- POSIX files

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const noexcept { return fd_; }

 private:
  int fd_;
};

void read_at(const FileDescriptor& file, std::byte* out, std::size_t size, std::uint64_t offset,
             const std::string& name) {
  while (size > 0) {
    const ssize_t got = ::pread(file.get(), out, size, off_t(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail(name, "cannot read: " + errno_text(errno));
    if (got == 0) fail(name, "file shrank while being read");
    out += got;
    offset += std::uint64_t(got);
    size -= std::size_t(got);
  }
}

// numpy writes '|' (no byte order) for one-byte types and '<' for the others. bfloat16 has no
// descr of its own in the format (ml_dtypes saves it as raw two-byte voids, '<V2', which any
// two-byte type could be): refused rather than written under a guess.
std::string descr_of(DataType type) {
  for (const auto& c : type_codes)
    if (c.type == type) return (size_of(type) == 1 ? "|" : "<") + std::string(c.code);
  throw Error(Errc::invalid_type, "npy", "desc",
              std::string(name_of(type)) + " has no .npy descr; it is supported through the API only");
}

}  // namespace

Array parse(std::span<const std::byte> file, const std::string& name) {
  const std::uint64_t preamble =
      preamble_size(file.first(std::min(file.size(), max_fixed_prefix)), file.size(), name);
  Header header = parse_header(file.first(preamble), name);
  check_data_size(header, file.size() - preamble, name);
  return {header.desc, std::vector<std::byte>(file.begin() + preamble, file.end())};
}

Array read(const std::string& path) {
  const FileDescriptor file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (file.get() < 0) fail(path, "cannot open: " + errno_text(errno));
  struct stat status {};
  if (::fstat(file.get(), &status) != 0) fail(path, "cannot stat: " + errno_text(errno));
  if (!S_ISREG(status.st_mode)) fail(path, "not a regular file");
  const std::uint64_t file_size = std::uint64_t(status.st_size);

  // Read only as much as each step has proven to exist, so a hostile header cannot make us
  // allocate more than the file holds.
  std::vector<std::byte> preamble(std::min<std::uint64_t>(file_size, max_fixed_prefix));
  read_at(file, preamble.data(), preamble.size(), 0, path);
  const std::uint64_t preamble_bytes = preamble_size(preamble, file_size, path);
  const std::size_t already_read = preamble.size();
  preamble.resize(preamble_bytes);
  if (preamble_bytes > already_read)
    read_at(file, preamble.data() + already_read, preamble_bytes - already_read, already_read,
            path);
  Header header = parse_header(preamble, path);
  check_data_size(header, file_size - preamble_bytes, path);

  Array array{header.desc, std::vector<std::byte>(header.data_bytes)};
  read_at(file, array.bytes.data(), array.bytes.size(), preamble_bytes, path);
  return array;
}

std::vector<std::byte> serialize(const TensorDesc& desc, const void* data) {
  std::int64_t data_bytes = std::int64_t(size_of(desc.dtype()));
  for (std::int64_t size : desc.sizes()) {
    if (size < 1)
      throw Error(Errc::invalid_shape, "npy", "desc",
                  "sizes must be at least 1 to be written, got " + desc.to_string());
    if (__builtin_mul_overflow(data_bytes, size, &data_bytes))
      throw Error(Errc::invalid_shape, "npy", "desc",
                  "total byte size of " + desc.to_string() + " overflows 64 bits");
  }
  if (!desc.is_packed())
    throw Error(Errc::invalid_stride, "npy", "desc",
                "only packed row-major tensors can be written, got " + desc.to_string());
  if (!data) throw Error(Errc::invalid_parameter, "npy", "data", "is null");
  const std::string descr = descr_of(desc.dtype());

  // The dict exactly as numpy writes it: keys sorted, "(5,)" for rank 1, a trailing ", ".
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (";
  for (int d = 0; d < desc.rank(); ++d) header += (d ? ", " : "") + std::to_string(desc.size(d));
  header += desc.rank() == 1 ? ",), }" : "), }";
  // Pad with spaces so the data starts 64-byte aligned, then end with '\n'.
  const std::size_t fixed = magic.size() + version_size + 2;
  header.append((array_align - (fixed + header.size() + 1) % array_align) % array_align, ' ');
  header += '\n';

  std::vector<std::byte> file;
  file.reserve(fixed + header.size() + std::size_t(data_bytes));
  const auto append = [&](const void* bytes, std::size_t size) {
    const auto* first = static_cast<const std::byte*>(bytes);
    file.insert(file.end(), first, first + size);
  };
  append(magic.data(), magic.size());
  const unsigned char version_and_length[] = {1, 0, std::uint8_t(header.size()),
                                              std::uint8_t(header.size() >> 8)};
  append(version_and_length, sizeof version_and_length);
  append(header.data(), header.size());
  append(data, std::size_t(data_bytes));
  return file;
}

void write(const std::string& path, const TensorDesc& desc, const void* data) {
  const std::vector<std::byte> contents = serialize(desc, data);
  cli::write_output(path, contents, "npy");
}

}  // namespace hk::npy
