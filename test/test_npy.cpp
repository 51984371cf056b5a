// Tests of the .npy reader and writer. Files are built byte by byte here so that the tests need no
// numpy; the expected layouts were checked against numpy.save and numpy.load.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "hetkern/error.hpp"
#include "tools/npy.hpp"

namespace {

namespace fs = std::filesystem;
using hk::DataType;
using Bytes = std::vector<std::byte>;

Bytes bytes_of(std::string_view text) {
  const auto* first = reinterpret_cast<const std::byte*>(text.data());
  return Bytes(first, first + text.size());
}

// A .npy file with the given format version, header text and data bytes (no alignment padding:
// the reader must not depend on it).
Bytes npy_file(int major, std::string_view header, const Bytes& data = {}) {
  Bytes file = bytes_of("\x93NUMPY");
  file.push_back(std::byte(major));
  file.push_back(std::byte(0));
  const int length_size = major == 1 ? 2 : 4;
  for (int i = 0; i < length_size; ++i) file.push_back(std::byte(header.size() >> (8 * i)));
  const Bytes text = bytes_of(header);
  file.insert(file.end(), text.begin(), text.end());
  file.insert(file.end(), data.begin(), data.end());
  return file;
}

template <typename T>
Bytes bytes_of_values(const std::vector<T>& values) {
  Bytes out(values.size() * sizeof(T));
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

Bytes pattern(std::size_t size) {
  Bytes out(size);
  for (std::size_t i = 0; i < size; ++i) out[i] = std::byte(i * 7 + 3);
  return out;
}

std::vector<std::int64_t> to_vector(std::span<const std::int64_t> values) {
  return {values.begin(), values.end()};
}

// The rule of the hk::Error that `action` throws, checking it is an invalid_file error of "npy"
// about `subject`; a marker when it throws nothing.
std::string error_of(const std::function<void()>& action, const std::string& subject = "test.npy") {
  try {
    action();
  } catch (const hk::Error& e) {
    EXPECT_EQ(e.code(), hk::Errc::invalid_file) << e.what();
    EXPECT_EQ(e.op(), "npy");
    EXPECT_EQ(e.subject(), subject);
    return e.rule();
  }
  return "<no error>";
}

std::string parse_error(const Bytes& file) {
  return error_of([&] { hk::npy::parse(file, "test.npy"); });
}

testing::AssertionResult contains(const std::string& text, std::string_view phrase) {
  if (text.find(phrase) != std::string::npos) return testing::AssertionSuccess();
  return testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << phrase << "\"";
}

std::string header(std::string_view descr, std::string_view shape,
                   std::string_view fortran = "False") {
  return "{'descr': '" + std::string(descr) + "', 'fortran_order': " + std::string(fortran) +
         ", 'shape': " + std::string(shape) + ", }\n";
}

// ---- Round trips

constexpr DataType all_types[] = {DataType::float16, DataType::float32, DataType::float64,
                                  DataType::int8,    DataType::uint8,   DataType::int32,
                                  DataType::uint32,  DataType::int64,   DataType::uint64};

TEST(NpyRoundTrip, EveryTypeAndRank) {
  const std::vector<std::vector<std::int64_t>> shapes = {
      {}, {5}, {2, 3, 4}, {2, 1, 2, 3, 1, 2, 2, 1}};
  for (DataType type : all_types) {
    for (const auto& sizes : shapes) {
      const hk::TensorDesc desc(type, sizes);
      SCOPED_TRACE(desc.to_string());
      const Bytes data = pattern(std::size_t(desc.element_count()) * hk::size_of(type));
      const Bytes file = hk::npy::serialize(desc, data.data());
      const std::size_t preamble = 10 + std::size_t(file[8]) + 256 * std::size_t(file[9]);
      EXPECT_EQ(preamble % 64, 0u);
      EXPECT_EQ(file.size(), preamble + data.size());

      const hk::npy::Array array = hk::npy::parse(file, "test.npy");
      EXPECT_EQ(array.desc.dtype(), type);
      EXPECT_EQ(to_vector(array.desc.sizes()), sizes);
      EXPECT_TRUE(array.desc.is_packed());
      EXPECT_EQ(array.bytes, data);
    }
  }
}

TEST(NpyRoundTrip, WriteThenRead) {
  const fs::path path =
      fs::temp_directory_path() / ("hk_npy_roundtrip_" + std::to_string(getpid()) + ".npy");
  const std::vector<std::int64_t> values = {-1, 2, -3, 4, -5, 6};
  hk::npy::write(path.string(), hk::TensorDesc(DataType::int64, {2, 3}), values.data());
  const hk::npy::Array array = hk::npy::read(path.string());
  fs::remove(path);
  EXPECT_EQ(array.desc.to_string(), "int64{2,3}");
  EXPECT_EQ(array.bytes, bytes_of_values(values));
  EXPECT_EQ(array.data(), array.bytes.data());
}

TEST(NpyWrite, HeaderMatchesNumpy) {
  const std::vector<float> values(12, 1.5f);
  const Bytes file = hk::npy::serialize(hk::TensorDesc(DataType::float32, {3, 4}), values.data());
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }";
  const std::string expected = std::string("\x93NUMPY\x01\x00\x76\x00", 10) + dict +
                               std::string(128 - 10 - dict.size() - 1, ' ') + "\n";
  EXPECT_EQ(Bytes(file.begin(), file.begin() + 128), bytes_of(expected));

  const std::uint8_t one = 7;
  const std::string rank0 = "{'descr': '|u1', 'fortran_order': False, 'shape': (), }";
  const std::string rank1 = "{'descr': '|i1', 'fortran_order': False, 'shape': (1,), }";
  const Bytes scalar = hk::npy::serialize(hk::TensorDesc(DataType::uint8, {}), &one);
  const Bytes vector = hk::npy::serialize(hk::TensorDesc(DataType::int8, {1}), &one);
  EXPECT_EQ(Bytes(scalar.begin() + 10, scalar.begin() + 10 + rank0.size()), bytes_of(rank0));
  EXPECT_EQ(Bytes(vector.begin() + 10, vector.begin() + 10 + rank1.size()), bytes_of(rank1));
}

TEST(NpyWrite, RejectsDescriptorsItCannotWrite) {
  const std::vector<float> values(6);
  const auto code_of = [&](const hk::TensorDesc& desc, const void* data) {
    try {
      hk::npy::serialize(desc, data);
    } catch (const hk::Error& e) {
      return e.code();
    }
    return hk::Errc::invalid_file;  // not expected from serialize: marks "no error"
  };
  EXPECT_EQ(code_of(hk::TensorDesc(DataType::float32, {2, 3}, {1, 2}), values.data()),
            hk::Errc::invalid_stride);
  EXPECT_EQ(code_of(hk::TensorDesc(DataType::float32, {2, 0}), values.data()),
            hk::Errc::invalid_shape);
  EXPECT_EQ(code_of(hk::TensorDesc(DataType::float32, {1LL << 40, 1LL << 40}), values.data()),
            hk::Errc::invalid_shape);
  EXPECT_EQ(code_of(hk::TensorDesc(DataType::float32, {2, 3}), nullptr),
            hk::Errc::invalid_parameter);
  // bfloat16 has no descr of its own ('|V2' would be any two-byte type).
  EXPECT_EQ(code_of(hk::TensorDesc(DataType::bfloat16, {2, 3}), values.data()),
            hk::Errc::invalid_type);
}

// ---- Reading hand-built files

TEST(NpyRead, Version1) {
  const Bytes data = bytes_of_values(std::vector<std::int32_t>{1, -2, 3, -4, 5, -6});
  const hk::npy::Array array =
      hk::npy::parse(npy_file(1, header("<i4", "(2, 3)"), data), "test.npy");
  EXPECT_EQ(array.desc.to_string(), "int32{2,3}");
  EXPECT_EQ(array.bytes, data);
}

TEST(NpyRead, Version2) {
  const Bytes data = pattern(5 * 2);
  const hk::npy::Array array = hk::npy::parse(npy_file(2, header("<f2", "(5,)"), data), "test.npy");
  EXPECT_EQ(array.desc.to_string(), "float16{5}");
  EXPECT_EQ(array.bytes, data);
}

TEST(NpyRead, Version3) {
  const Bytes data = pattern(8);
  const hk::npy::Array array = hk::npy::parse(npy_file(3, header("<u8", "()"), data), "test.npy");
  EXPECT_EQ(array.desc.rank(), 0);
  EXPECT_EQ(array.desc.dtype(), DataType::uint64);
  EXPECT_EQ(array.bytes, data);
}

TEST(NpyRead, HeaderSyntaxVariants) {
  const Bytes data = pattern(2 * 3 * 4);
  const std::string headers[] = {
      "{\"shape\":(2,3),\"fortran_order\":False,\"descr\":\"<u4\"}",
      "  {\n\t'fortran_order' : False ,'descr':'<u4',\r\n 'shape' : ( 2 , 3 , ) }   \n",
      "{'descr': '=u4', 'shape': (2, 3), 'fortran_order': False}" + std::string(40, ' ') + "\n",
  };
  for (const std::string& text : headers) {
    SCOPED_TRACE(text);
    const hk::npy::Array array = hk::npy::parse(npy_file(1, text, data), "test.npy");
    EXPECT_EQ(array.desc.to_string(), "uint32{2,3}");
  }
}

TEST(NpyRead, OneByteTypesAcceptAnyByteOrder) {
  for (std::string_view descr : {"|i1", "<i1", ">i1", "=i1"})
    EXPECT_EQ(hk::npy::parse(npy_file(1, header(descr, "(3,)"), pattern(3)), "t").desc.dtype(),
              DataType::int8);
  for (std::string_view descr : {"|u1", "<u1"})
    EXPECT_EQ(hk::npy::parse(npy_file(1, header(descr, "(3,)"), pattern(3)), "t").desc.dtype(),
              DataType::uint8);
}

TEST(NpyRead, FortranOrderGivesColumnMajorStrides) {
  // numpy.asfortranarray(a) with a[i, j] = 10 * i + j stores the first index fastest.
  const int rows = 2, cols = 3;
  std::vector<std::int32_t> stored;
  for (int j = 0; j < cols; ++j)
    for (int i = 0; i < rows; ++i) stored.push_back(10 * i + j);
  const hk::npy::Array array =
      hk::npy::parse(npy_file(1, header("<i4", "(2, 3)", "True"), bytes_of_values(stored)), "t");
  EXPECT_EQ(to_vector(array.desc.sizes()), (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(to_vector(array.desc.strides()), (std::vector<std::int64_t>{1, 2}));
  const auto* elements = static_cast<const std::int32_t*>(array.data());
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j)
      EXPECT_EQ(elements[i * array.desc.stride(0) + j * array.desc.stride(1)], 10 * i + j);

  const hk::npy::Array rank3 =
      hk::npy::parse(npy_file(1, header("|u1", "(2, 3, 4)", "True"), pattern(24)), "t");
  EXPECT_EQ(to_vector(rank3.desc.strides()), (std::vector<std::int64_t>{1, 2, 6}));
}

TEST(NpyRead, FromDisk) {
  const fs::path path =
      fs::temp_directory_path() / ("hk_npy_read_" + std::to_string(getpid()) + ".npy");
  const Bytes data = pattern(4 * 3);
  const Bytes file = npy_file(2, header("<f4", "(3,)"), data);
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(file.data()), std::streamsize(file.size()));
  const hk::npy::Array array = hk::npy::read(path.string());
  EXPECT_EQ(array.desc.to_string(), "float32{3}");
  EXPECT_EQ(array.bytes, data);

  // The disk path checks sizes just like parse() does.
  Bytes truncated = file;
  truncated.pop_back();
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(truncated.data()), std::streamsize(truncated.size()));
  EXPECT_TRUE(contains(error_of([&] { hk::npy::read(path.string()); }, path.string()),
                       "expected 12 data bytes"));
  fs::remove(path);
}

// ---- Errors

TEST(NpyErrors, BadMagic) {
  Bytes file = npy_file(1, header("<f4", "(1,)"), pattern(4));
  file[1] = std::byte('X');
  EXPECT_TRUE(contains(parse_error(file), "bad magic"));
  EXPECT_TRUE(contains(parse_error(bytes_of("PK\x03\x04")), "bad magic"));
}

TEST(NpyErrors, FileEndsInPreamble) {
  EXPECT_TRUE(contains(parse_error({}), "ends inside the .npy preamble"));
  EXPECT_TRUE(contains(parse_error(bytes_of("\x93NUMP")), "ends inside the .npy preamble"));
  EXPECT_TRUE(contains(parse_error(bytes_of(std::string("\x93NUMPY\x02\x00\x10\x00", 10))),
                       "ends inside the .npy preamble"));
}

TEST(NpyErrors, UnsupportedVersion) {
  Bytes file = npy_file(1, header("<f4", "(1,)"), pattern(4));
  file[6] = std::byte(4);
  EXPECT_TRUE(contains(parse_error(file), "unsupported .npy format version 4.0"));
  file[6] = std::byte(1);
  file[7] = std::byte(1);
  EXPECT_TRUE(contains(parse_error(file), "unsupported .npy format version 1.1"));
}

TEST(NpyErrors, HeaderLongerThanFile) {
  // A hostile version-2 header length of almost 4 GiB must be refused before anything is allocated.
  const Bytes file = bytes_of(std::string("\x93NUMPY\x02\x00\xf0\xff\xff\xff{}", 14));
  EXPECT_TRUE(
      contains(parse_error(file), "header length 4294967280 exceeds the file size of 14 bytes"));
}

TEST(NpyErrors, HeaderNotADict) {
  EXPECT_TRUE(
      contains(parse_error(npy_file(1, "['descr', '<f4']\n")), "not a Python dict literal"));
  EXPECT_TRUE(contains(parse_error(npy_file(1, "")), "not a Python dict literal"));
}

TEST(NpyErrors, MalformedDict) {
  for (std::string_view text : {"{'descr' '<f4'}", "{'descr': '<f4", "{'descr': '<f4'} extra",
                                "{'descr': '<f4',, }", "{'shape': (3 4)}", "{'descr': @}"}) {
    SCOPED_TRACE(text);
    EXPECT_TRUE(contains(parse_error(npy_file(1, text)), "malformed header dict"));
  }
  EXPECT_TRUE(contains(parse_error(npy_file(1, "{3: 4}")), "keys must be strings"));
}

TEST(NpyErrors, DeepNesting) {
  const std::string deep = "{'descr': " + std::string(100000, '[') + "}";
  EXPECT_TRUE(contains(parse_error(npy_file(2, deep)), "levels deep"));
}

TEST(NpyErrors, MissingUnexpectedOrDuplicateKey) {
  EXPECT_TRUE(contains(parse_error(npy_file(1, "{'descr': '<f4', 'fortran_order': False}")),
                       "header is missing the 'shape' key"));
  EXPECT_TRUE(contains(parse_error(npy_file(1, "{'shape': (1,), 'fortran_order': False}")),
                       "header is missing the 'descr' key"));
  EXPECT_TRUE(contains(
      parse_error(npy_file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}")),
      "unexpected key 'x'"));
  EXPECT_TRUE(
      contains(parse_error(npy_file(
                   1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}")),
               "duplicate key 'descr'"));
}

TEST(NpyErrors, MalformedShape) {
  for (std::string_view shape : {"3", "(5)", "[3, 4]", "(3, 'a')", "(3, (4,))", "'(3,)'"}) {
    SCOPED_TRACE(shape);
    EXPECT_TRUE(contains(parse_error(npy_file(1, header("<f4", shape))), "malformed shape"));
  }
}

TEST(NpyErrors, FortranOrderNotBool) {
  EXPECT_TRUE(contains(parse_error(npy_file(1, header("<f4", "(1,)", "1"))),
                       "'fortran_order' must be True or False"));
}

TEST(NpyErrors, NegativeDimension) {
  EXPECT_TRUE(
      contains(parse_error(npy_file(1, header("<f4", "(3, -2)"))), "negative dimension -2"));
}

TEST(NpyErrors, HugeDimension) {
  EXPECT_TRUE(contains(parse_error(npy_file(1, header("<f4", "(99999999999999999999,)"))),
                       "dimension 99999999999999999999 in shape is too large"));
}

TEST(NpyErrors, RankAboveEight) {
  EXPECT_TRUE(contains(parse_error(npy_file(1, header("<f4", "(1, 1, 1, 1, 1, 1, 1, 1, 1)"))),
                       "rank 9 exceeds the maximum of 8"));
}

TEST(NpyErrors, ByteSizeOverflow) {
  EXPECT_TRUE(contains(parse_error(npy_file(1, header("<f4", "(4294967296, 4294967296)"))),
                       "overflows 64 bits"));
  EXPECT_TRUE(contains(parse_error(npy_file(1, header("|u1", "(4611686018427387904, 2)"))),
                       "overflows 64 bits"));
}

TEST(NpyErrors, ZeroSize) {
  EXPECT_TRUE(contains(parse_error(npy_file(1, header("<f4", "(3, 0)"))),
                       "zero-size arrays are not supported"));
}

TEST(NpyErrors, BigEndian) {
  for (std::string_view descr : {">f4", ">f2", ">i4", ">u8"}) {
    SCOPED_TRACE(descr);
    EXPECT_TRUE(contains(parse_error(npy_file(1, header(descr, "(1,)"), pattern(8))),
                         "big-endian data is not supported"));
  }
}

TEST(NpyErrors, ObjectArray) {
  EXPECT_TRUE(contains(parse_error(npy_file(1, header("|O", "(1,)"), pattern(8))),
                       "object arrays are not supported (descr '|O')"));
}

TEST(NpyErrors, BoolArray) {
  EXPECT_TRUE(contains(parse_error(npy_file(1, header("|b1", "(1,)"), pattern(1))),
                       "bool arrays are not supported (descr '|b1')"));
}

TEST(NpyErrors, StructuredDtype) {
  const std::string text =
      "{'descr': [('a', '<f4'), ('b', '<i4')], 'fortran_order': False, 'shape': (1,), }";
  EXPECT_TRUE(contains(parse_error(npy_file(1, text, pattern(8))),
                       "structured dtypes are not supported (descr [('a', '<f4'), ('b', '<i4')])"));
}

TEST(NpyErrors, OtherDtypes) {
  for (std::string_view descr : {"|V2", "<c8", "<U3", "|S4", "<M8[ns]", "<i2"}) {
    SCOPED_TRACE(descr);
    EXPECT_TRUE(contains(parse_error(npy_file(1, header(descr, "(1,)"), pattern(16))),
                         "unsupported dtype descr '" + std::string(descr) + "'"));
  }
  EXPECT_TRUE(contains(parse_error(npy_file(1, header("|f4", "(1,)"), pattern(4))),
                       "does not give a byte order"));
  // A NUL or a control byte is shown, not passed on: it cut the message short.
  EXPECT_TRUE(contains(parse_error(npy_file(1, header(std::string_view("<f4\0\x1b", 5), "(1,)"), pattern(4))),
                       "unsupported dtype descr '<f4\\x00\\x1b' (supported:"));
}

TEST(NpyErrors, Truncated) {
  const std::string rule = parse_error(npy_file(1, header("<f4", "(3, 4)"), pattern(40)));
  EXPECT_TRUE(contains(rule, "file is truncated: expected 48 data bytes"));
  EXPECT_TRUE(contains(rule, "found 40"));
}

TEST(NpyErrors, TrailingBytes) {
  EXPECT_TRUE(contains(parse_error(npy_file(1, header("<f4", "(3, 4)"), pattern(50))),
                       "2 trailing bytes after the 48 data bytes"));
}

TEST(NpyErrors, CannotOpen) {
  EXPECT_TRUE(contains(error_of([] { hk::npy::read("/nonexistent/x.npy"); }, "/nonexistent/x.npy"),
                       "cannot open: No such file or directory"));
  const std::string directory = fs::temp_directory_path().string();
  EXPECT_TRUE(
      contains(error_of([&] { hk::npy::read(directory); }, directory), "not a regular file"));
}

// Every prefix and every single-byte corruption of a valid file either parses or throws hk::Error:
// no crash, no other exception (run under the sanitizers to catch out-of-bounds reads).
TEST(NpyErrors, CorruptedFilesNeverCrash) {
  const Bytes valid =
      hk::npy::serialize(hk::TensorDesc(DataType::int32, {2, 2}), pattern(16).data());
  for (std::size_t size = 0; size < valid.size(); ++size)
    EXPECT_NE(parse_error(Bytes(valid.begin(), valid.begin() + std::ptrdiff_t(size))),
              "<no error>");
  for (std::size_t at = 0; at < valid.size() - 16; ++at) {
    for (int value = 0; value < 256; ++value) {
      Bytes corrupted = valid;
      corrupted[at] = std::byte(value);
      try {
        hk::npy::parse(corrupted, "test.npy");
      } catch (const hk::Error&) {
      }
    }
  }
}

// ---- Atomic writes

class NpyWriteFailure : public testing::Test {
 protected:
  void SetUp() override {
    directory_ =
        fs::temp_directory_path() / ("hk_npy_test_" + std::to_string(getpid()) + "_" +
                                     testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(directory_);
    fs::create_directory(directory_);
  }
  void TearDown() override {
    fs::remove_all(directory_);
  }

  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(directory_))
      names.push_back(entry.path().filename());
    std::sort(names.begin(), names.end());
    return names;
  }

  static std::string contents_of(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

  fs::path directory_;
  std::vector<float> values_ = std::vector<float>(1000, 2.0f);
  hk::TensorDesc desc_{DataType::float32, {10, 100}};
};

TEST_F(NpyWriteFailure, SuccessReplacesFileAndLeavesNoTemporary) {
  const fs::path path = directory_ / "out.npy";
  std::ofstream(path) << "old";
  hk::npy::write(path.string(), desc_, values_.data());
  EXPECT_EQ(entries(), std::vector<std::string>{"out.npy"});
  EXPECT_EQ(hk::npy::read(path.string()).desc.to_string(), "float32{10,100}");
}

TEST_F(NpyWriteFailure, PathIsADirectory) {
  const fs::path path = directory_ / "out.npy";
  fs::create_directory(path);
  std::ofstream(path / "keep") << "kept";
  EXPECT_TRUE(contains(
      error_of([&] { hk::npy::write(path.string(), desc_, values_.data()); }, path.string()),
      "is a directory"));
  EXPECT_EQ(entries(), std::vector<std::string>{"out.npy"});
  EXPECT_EQ(contents_of(path / "keep"), "kept");
}

// A chain of relative links ending at a file that does not exist yet: the file is created where
// the last link points, relative to that link's directory, and both links stay.
TEST_F(NpyWriteFailure, LinkChainToANewFileIsFollowedAndKept) {
  fs::create_directory(directory_ / "sub");
  fs::create_symlink("sub/second", directory_ / "first");
  fs::create_symlink("../target.npy", directory_ / "sub" / "second");
  hk::npy::write((directory_ / "first").string(), desc_, values_.data());
  EXPECT_TRUE(fs::is_symlink(directory_ / "first"));
  EXPECT_TRUE(fs::is_symlink(directory_ / "sub" / "second"));
  EXPECT_EQ(hk::npy::read((directory_ / "target.npy").string()).desc.to_string(), "float32{10,100}");
  EXPECT_EQ(entries(), (std::vector<std::string>{"first", "sub", "target.npy"}));
}

TEST_F(NpyWriteFailure, LinkLoopIsRefused) {
  fs::create_symlink("b", directory_ / "a");
  fs::create_symlink("a", directory_ / "b");
  EXPECT_TRUE(contains(error_of([&] { hk::npy::write((directory_ / "a").string(), desc_, values_.data()); },
                                (directory_ / "a").string()),
                       "symbolic links"));
  EXPECT_EQ(entries(), (std::vector<std::string>{"a", "b"}));
}

TEST_F(NpyWriteFailure, MissingDirectory) {
  const fs::path path = directory_ / "missing" / "out.npy";
  EXPECT_TRUE(contains(
      error_of([&] { hk::npy::write(path.string(), desc_, values_.data()); }, path.string()),
      "No such file or directory"));
  EXPECT_TRUE(entries().empty());
}

// A write that fails halfway (here: the file size limit) must leave the old file and no temporary.
TEST_F(NpyWriteFailure, FailureWhileWriting) {
  const fs::path path = directory_ / "out.npy";
  std::ofstream(path) << "old";
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  rlimit small = saved;
  small.rlim_cur = 1024;
  const auto previous_handler = std::signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  const std::string rule =
      error_of([&] { hk::npy::write(path.string(), desc_, values_.data()); }, path.string());
  setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, previous_handler);
  EXPECT_TRUE(contains(rule, "File too large"));
  EXPECT_EQ(entries(), std::vector<std::string>{"out.npy"});
  EXPECT_EQ(contents_of(path), "old");
}

TEST_F(NpyWriteFailure, BadDescriptorWritesNothing) {
  const fs::path path = directory_ / "out.npy";
  EXPECT_THROW(hk::npy::write(path.string(), hk::TensorDesc(DataType::float32, {10, 100}, {1, 10}),
                              values_.data()),
               hk::Error);
  EXPECT_TRUE(entries().empty());
}

}  // namespace
