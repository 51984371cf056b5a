// Parts of one QuantizedLinearMatMul for the strategies that spread a call over several
// executors (qmm.split, qmm.devices): a part is the same problem on a contiguous group of rows of
// A, or of batch matrices, whose outputs are those outputs of the whole.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "algorithms/quantized_matmul.hpp"
#include "schedules/qmm_offload.hpp"
#include "schedules/qmm_offload_plan.hpp"
#include "schedules/strategies/qmm_device_b.hpp"
#include "schedules/strategies/split_common.hpp"

namespace hk::detail {

/// How a call is cut into parts: along its outermost batch dimension of more than one matrix when
/// that has at least `parts` of them (whole matrices per part), else along the rows of A in every
/// batch matrix.
struct QmmCut {
  int batch_dim = -1;      // 0 or 1 (of QmmProblem::batch); -1: rows
  std::int64_t units = 0;  // matrices along that dimension, or rows
  bool by_batch() const { return batch_dim >= 0; }
};
QmmCut qmm_cut(const QmmProblem& problem, int parts);

/// The cut's units over `devices` devices as spread_ranges shares them (home_share per mille to
/// devices[0], the rest by the others' speeds `others`, or evenly), rows in whole 128-row tiles of
/// the GPU kernels (the last part takes what is left), so that no part computes a partial tile or
/// packs its rows of A.
std::vector<SplitRange> qmm_spread_ranges(const QmmCut& cut, int devices, int home_share,
                                          const std::vector<double>& others = {});

/// Units [r.begin, r.end) of the cut: the problem on those rows or matrices only.
QmmProblem qmm_part(const QmmProblem& problem, const QmmCut& cut, SplitRange r);

/// Columns [r.begin, r.end) of B and of the output: the problem on those columns only.
QmmProblem qmm_columns(const QmmProblem& problem, SplitRange r);

/// The product kernels' bands of rows with OffloadQmmArrivals::last_rows, in the order their
/// tiles run: band_rows tile rows each (OffloadQmmArrivals::band_rows), then the last last_rows
/// tile rows (all of them where there are fewer).
std::vector<SplitRange> qmm_arrival_bands(std::int64_t M, std::int64_t band_rows = qmm_offload_band_rows,
                                          std::int64_t last_rows = 1);

/// Waits until a launch with OffloadQmmArrivals::bands_done on `device` has counted `expected`
/// tiles in band `band`, reading the count every 20 us; false as soon as stop() holds. Throws
/// hk::Error(Errc::unavailable) when launch_ended() held before a read that still came short.
bool wait_for_band(int device, const std::int32_t* bands_done, std::size_t band, std::int32_t expected,
                   const std::function<bool()>& stop, const std::function<bool()>& launch_ended);

/// Whether each range's output span (from its first output to its last, what a copy of it takes)
/// holds no output of another range.
bool qmm_parts_own_their_spans(const QmmProblem& problem, const QmmCut& cut, const std::vector<SplitRange>& ranges);

/// The product of rows [r.begin, r.end) of a host-tensor call on `device` with `launch`. Where
/// the span of those rows' outputs holds other rows, which others write meanwhile, the device
/// writes a packed copy that is then copied into place.
void multiply_host_rows_on_device(const QmmProblem& problem, SplitRange r, const QmmPlan& launch, int device);

/// A part of a call whose tensors lie on device `home`, run on `device` with `launch`: the spans
/// of its A, B (and of its output, where it has gaps) are copied there, the product runs there and
/// the output span comes back. `device` may be `home` itself (the host fallback's tests). With
/// `kept`, B is the kept one, already on `device` (no copy).
void multiply_part_on_other_device(const QmmProblem& part, const QmmPlan& launch, int home, int device,
                                   const DeviceB* kept = nullptr);

/// The same product with B replaced by its B' columns (qmm_offload_pack_b_columns) at `columns`.
QmmProblem with_b_columns(const QmmProblem& problem, const void* columns);

/// Whether B already is its B' columns: int8, column-major, columns of K contiguous bytes.
bool is_b_columns(const MatrixView& b, std::int64_t K);

/// What one device of a spread call spent its time on, in seconds from the call's start:
/// HETKERN_LOG=devices prints it, a line per device.
struct PartTimes {
  int device = 0;
  std::int64_t rows = 0;
  double begun = 0;     // its thread began
  double copying = 0;   // its copies began
  double a_there = 0;   // its rows of A were there
  double b_there = 0;   // all of B' was there
  double inputs = 0;    // its launch began
  double computed = 0;  // its last product finished
  double done = 0;      // its outputs are back on the home device
  double products = 0;  // the launch's own time
};

/// B' passed down a chain of devices, a column group at a time: link 0 is the home device, where
/// all of B' lies; link i > 0 copies each group but the first from link i - 1 once that has it, so
/// that B' leaves each device once, not the home device once per other device (a GPU's links out
/// are shared by everything it sends). The first group, which the first tiles wait for, every
/// link copies from the home device. Groups are whole tiles, a sixteenth of the columns or 16 MiB of B' if
/// that is less, so that a group reaches the last link soon after it leaves the first.
class ColumnRelay {
 public:
  ColumnRelay(int home, const void* columns, std::int64_t N, std::int64_t K);
  /// A new link on `device`, after the last one, keeping B' at `columns` (N * K bytes there, which
  /// must outlive every link's part: the next link reads them): its index. `there`: B' is there
  /// already (kept across calls), and the link copies none.
  std::size_t add(int device, void* columns, bool there = false);
  /// Whether link `link` had all of B' from the start.
  bool kept(std::size_t link) const { return links_[link].kept; }
  int home() const { return links_[0].device; }
  int device(std::size_t link) const { return links_[link].device; }
  char* columns(std::size_t link) const { return links_[link].columns; }
  std::size_t groups() const { return groups_.size(); }
  SplitRange group(std::size_t g) const { return groups_[g]; }
  /// Group `group` is on link `link`'s device.
  void landed(std::size_t link, std::size_t group);
  /// Where link `link` copies group `group` from, once that link has it; nothing once any link failed.
  struct Source {
    int device;
    const char* columns;
  };
  std::optional<Source> source(std::size_t link, std::size_t group);
  void fail();
  bool failed();

 private:
  struct Link {
    int device;
    char* columns;
    std::vector<bool> there;  // per group
    bool kept;                // all there from the start
  };
  std::vector<SplitRange> groups_;
  std::vector<Link> links_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool failed_ = false;
};

/// The last tile rows of a streamed part that are a band of their own, after the others. Their
/// tiles, about a wave of an H200's teams, run while the band before them goes back: with one tile
/// row alone, the three other devices of four sent that band (30 MiB each) to the home device
/// together once their products had nearly ended, and their outputs were back 0.1-0.25 ms later
/// (0.03-0.1 ms with two rows; docs/gpu.md).
inline constexpr std::int64_t qmm_stream_last_rows = 2;

/// A part of a one-matrix call whose B is B' columns (a column-major int8 B with columns of K
/// bytes), run on relay link `link`'s device in one launch whose tiles wait for their operands
/// (OffloadQmmArrivals), in the bands qmm_arrival_bands(part.M, qmm_offload_band_rows,
/// qmm_stream_last_rows) lists: the calling thread copies A's rows a band at a time from the home device
/// and B' a group at a time as the relay says (the rest of B' by two threads), marks each as
/// there, then brings the outputs back, each band's as soon as its tiles are done; a kept thread
/// launches meanwhile, at once, or once an operand that the product packs or sums first
/// (qmm_offload_streamable) is all there. Any failure fails the relay, so that no later link
/// waits for groups that will not come. With `home_column_sums` (B's column sums on the home
/// device, qmm_offload_column_sums), they are copied over first and the launch reads them, where
/// its tiles would otherwise sum each column group of B' as it lands. Fills `times`
/// (times.device, times.rows too).
void multiply_part_streaming_b(const QmmProblem& part, const QmmPlan& launch, ColumnRelay& relay, std::size_t link,
                               const std::int64_t* home_column_sums, std::chrono::steady_clock::time_point start,
                               PartTimes& times);

/// The settings a device multiplies a part with, chosen for that part (its size sets the kernel).
using PartLaunch = std::function<QmmPlan(const QmmProblem& part)>;

/// A call whose tensors lie on devices[0] spread over `devices` (distinct or not): devices[0]
/// keeps home_share per mille of the cut's units and runs them where they lie, the other devices
/// share the rest by their measured speeds at the matmul (other_devices_speeds; evenly where
/// unknown), all at once. One matrix whose K is a whole number of 128-deep
/// slices has B' packed once on devices[0] and streamed to the others a column group at a time,
/// each group multiplied while the next one is copied; any other call goes part by part through
/// multiply_part_on_other_device. Where the parts' output spans would interleave, devices[0] runs
/// the whole call. With `kept` (a DevicePackedB's B, whose form `problem` already reads), each
/// device reads its own copy of it (made on the first call there) and no B crosses between them.
void spread_qmm(const QmmProblem& problem, const PartLaunch& launch, const std::vector<int>& devices, int home_share,
                const DeviceB* kept = nullptr);

}  // namespace hk::detail
