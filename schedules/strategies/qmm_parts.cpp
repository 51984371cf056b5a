// Parts of one QuantizedLinearMatMul, and running them on a device other than their data's.
#include "schedules/strategies/qmm_parts.hpp"

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <mutex>

#include "runtime/platform/device_memory.hpp"
#include "schedules/qmm_offload.hpp"
#include "schedules/qmm_strategies.hpp"

namespace hk::detail {
namespace {

// A per-row parameter's rows [r.begin, r.end); one value shared by every row stays as it is.
template <class T> std::vector<T> param_rows(const std::vector<T>& v, SplitRange r) {
  if (v.size() == 1) return v;
  return {v.begin() + r.begin, v.begin() + r.end};
}

// Rows [r.begin, r.end) of A, and of the output, in every batch matrix.
QmmProblem rows_of(const QmmProblem& p, SplitRange r) {
  QmmProblem part = p;
  part.M = r.size();
  // A and the output hold one-byte elements.
  part.a.data = static_cast<const char*>(p.a.data) + r.begin * p.a.row_stride;
  part.out = static_cast<char*>(p.out) + r.begin * p.out_row_stride;
  part.q.a_scale = param_rows(p.q.a_scale, r);
  part.q.a_zero = param_rows(p.q.a_zero, r);
  part.q.out_scale = param_rows(p.q.out_scale, r);
  part.q.out_zero = param_rows(p.q.out_zero, r);
  return part;
}

// Matrices [r.begin, r.end) of batch dimension `dim`.
QmmProblem batches_of(const QmmProblem& p, int dim, SplitRange r) {
  QmmProblem part = p;
  part.batch[dim] = r.size();
  part.a.data = static_cast<const char*>(p.a.data) + r.begin * p.a.batch_stride[dim];
  part.b.data = static_cast<const char*>(p.b.data) + r.begin * p.b.batch_stride[dim];
  part.out = static_cast<char*>(p.out) + r.begin * p.out_batch_stride[dim];
  return part;
}


// A device's part goes over in this many chunks, so that the copies of one overlap the product of
// another; a part with less of A than pipeline_min_bytes goes in one.
constexpr int pipeline_parts = 4;
constexpr std::size_t pipeline_min_bytes = std::size_t(16) << 20;

// The chunks of a part: the part itself, or pipeline_parts even pieces of its cut whose output
// spans do not interleave and whose spans of A overlap little (a column-major A's would each
// reach over most of it, copying it several times over).
std::vector<QmmProblem> pipeline_chunks(const QmmProblem& part, const QmmSpans& spans) {
  const QmmCut cut = qmm_cut(part, pipeline_parts);
  const auto count = std::min<std::int64_t>(pipeline_parts, cut.units);
  if (spans.a < pipeline_min_bytes || count < 2) return {part};
  std::vector<SplitRange> ranges;
  for (std::int64_t i = 0; i < count; ++i) ranges.push_back({cut.units * i / count, cut.units * (i + 1) / count});
  std::vector<QmmProblem> chunks;
  std::size_t a_bytes = 0;
  for (const SplitRange& r : ranges) {
    chunks.push_back(qmm_part(part, cut, r));
    a_bytes += qmm_spans(chunks.back()).a;
  }
  if (!qmm_parts_own_their_spans(part, cut, ranges) || a_bytes > spans.a + spans.a / 4) return {part};
  return chunks;
}

// How far a pipelined part's two threads are, each waiting for the other's progress.
class PipelineProgress {
 public:
  std::size_t copied = 0, multiplied = 0;  // chunks whose inputs are there; whose product is done

  void advance(std::size_t& counter) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      ++counter;
    }
    changed_.notify_all();
  }
  // Until `counter` passes `index`; false when the other thread failed.
  bool wait(const std::size_t& counter, std::size_t index) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return failed_ || counter > index; });
    return counter > index;
  }
  // `role`, releasing the other thread's waits when it throws.
  std::function<void()> guarded(const std::function<void()>& role) {
    return [this, role] {
      try {
        role();
      } catch (...) {
        {
          const std::lock_guard<std::mutex> lock(mutex_);
          failed_ = true;
        }
        changed_.notify_all();
        throw;
      }
    };
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool failed_ = false;
};

}  // namespace

QmmCut qmm_cut(const QmmProblem& p, int parts) {
  const int outer = p.batch[0] > 1 ? 0 : 1;
  if (p.batch[outer] > 1 && p.batch[outer] >= parts) return {outer, p.batch[outer]};
  return {-1, p.M};
}

QmmProblem qmm_part(const QmmProblem& p, const QmmCut& cut, SplitRange r) {
  return cut.by_batch() ? batches_of(p, cut.batch_dim, r) : rows_of(p, r);
}

bool qmm_parts_own_their_spans(const QmmProblem& p, const QmmCut& cut, const std::vector<SplitRange>& ranges) {
  // Ranges come in address order (strides are non-negative): each span must end before the next begins.
  const char* previous_end = nullptr;
  for (const SplitRange& r : ranges) {
    if (r.size() == 0) continue;
    const QmmProblem part = qmm_part(p, cut, r);
    if (part.N == 0) return true;
    const char* begin = static_cast<const char*>(part.out);
    if (previous_end && begin < previous_end) return false;
    previous_end = begin + qmm_spans(part).out;
  }
  return true;
}

void multiply_host_rows_on_device(const QmmProblem& problem, SplitRange r, int device) {
  QmmProblem part = rows_of(problem, r);
  const QmmPlan plan = *offload_launch(plan_qmm(part, Schedule("qmm.offload_mma")));
  // One matrix whose rows do not interleave: the span of the part's outputs holds only its own.
  if (problem.batch[0] * problem.batch[1] == 1 && (problem.N - 1) * problem.out_col_stride < problem.out_row_stride) {
    run_qmm_offload(part, plan, device);
    return;
  }
  const std::int64_t batches = problem.batch[0] * problem.batch[1], count = r.size(), N = problem.N;
  std::vector<std::uint8_t> packed(std::size_t(batches * count * N));
  char* const out = static_cast<char*>(part.out);
  part.out = packed.data();
  part.out_batch_stride[0] = problem.batch[1] * count * N;
  part.out_batch_stride[1] = count * N;
  part.out_row_stride = N;
  part.out_col_stride = 1;
  run_qmm_offload(part, plan, device);
  for (std::int64_t t = 0; t < batches; ++t) {
    const std::int64_t batch_offset =
        (t / problem.batch[1]) * problem.out_batch_stride[0] + (t % problem.batch[1]) * problem.out_batch_stride[1];
    for (std::int64_t m = 0; m < count; ++m)
      for (std::int64_t n = 0; n < N; ++n)
        out[batch_offset + m * problem.out_row_stride + n * problem.out_col_stride] =
            char(packed[std::size_t((t * count + m) * N + n)]);
  }
}

void multiply_part_on_other_device(const QmmProblem& part, const QmmPlan& launch, int home, int device) {
  if (part.M == 0 || part.N == 0 || part.batch[0] * part.batch[1] == 0) return;
  const QmmSpans spans = qmm_spans(part);
  ScratchLease a(device, spans.a), b(device, spans.b), out(device, spans.out);
  // Where an address of the part on the home device lies in its copy on `device`.
  const auto there = [](const void* at_home, const void* home_base, void* copy) {
    return static_cast<char*>(copy) + (static_cast<const char*>(at_home) - static_cast<const char*>(home_base));
  };
  const std::vector<QmmProblem> chunks = pipeline_chunks(part, spans);
  PipelineProgress progress;
  // The copies, in the order the product needs them: B, then each chunk's A (and its outputs'
  // span where it has gaps, which must come back unchanged); then each chunk's outputs back as
  // soon as they are done.
  const auto copy = [&] {
    copy_between_devices(b.data(), device, part.b.data, home, spans.b);
    for (const QmmProblem& c : chunks) {
      const QmmSpans s = qmm_spans(c);
      copy_between_devices(there(c.a.data, part.a.data, a.data()), device, c.a.data, home, s.a);
      if (s.out_has_gaps()) copy_between_devices(there(c.out, part.out, out.data()), device, c.out, home, s.out);
      progress.advance(progress.copied);
    }
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      if (!progress.wait(progress.multiplied, i)) return;
      copy_between_devices(chunks[i].out, home, there(chunks[i].out, part.out, out.data()), device,
                           qmm_spans(chunks[i]).out);
    }
  };
  const auto multiply = [&] {
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      if (!progress.wait(progress.copied, i)) return;
      QmmProblem c = chunks[i];
      c.a.data = there(c.a.data, part.a.data, a.data());
      c.b.data = there(c.b.data, part.b.data, b.data());
      c.out = there(c.out, part.out, out.data());
      run_qmm_offload_on_device(c, launch, device);
      progress.advance(progress.multiplied);
    }
  };
  run_parts({progress.guarded(copy), progress.guarded(multiply)});
}

void spread_qmm(const QmmProblem& problem, const QmmPlan& launch, const std::vector<int>& devices, int home_share) {
  const int home = devices[0];
  const QmmCut cut = qmm_cut(problem, int(devices.size()));
  const std::vector<SplitRange> ranges = spread_ranges(cut.units, int(devices.size()), home_share);
  if (devices.size() == 1 || !qmm_parts_own_their_spans(problem, cut, ranges)) {
    run_qmm_offload_on_device(problem, launch, home);
    return;
  }
  std::vector<std::function<void()>> parts;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const SplitRange r = ranges[i];
    if (r.size() == 0) continue;
    const QmmProblem part = qmm_part(problem, cut, r);
    if (i == 0)
      parts.insert(parts.begin(), [part, &launch, home] { run_qmm_offload_on_device(part, launch, home); });
    else
      parts.push_back([part, &launch, home, device = devices[i]] {
        multiply_part_on_other_device(part, launch, home, device);
      });
  }
  run_parts(parts);
}

}  // namespace hk::detail
