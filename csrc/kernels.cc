// lodestar's CPU kernels: the rank and tie engine's sorting work, run inside
// XLA as typed FFI custom calls (decision 0043).
//
// Every kernel works row by row on the last axis of its operands; all leading
// axes are flattened into rows. Rows are shared out over XLA's own intra-op
// thread pool, and the calling thread works too, so a kernel never waits on
// a task that no thread is free to run.
//
// Scores of every dtype are mapped to unsigned *order keys*: an unsigned
// integer whose ascending order is the value's ascending order, with -0.0
// merged into 0.0 and every NaN mapped to the largest key (NumPy sorts NaN
// last). Sorting keys, not values, gives one code path for floats, signed
// and unsigned integers and booleans.
//
// The Python module exposes one function, targets(), returning a dict of
// handler name -> PyCapsule for jax.ffi.register_ffi_target.

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <type_traits>
#include <vector>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

// ---------------------------------------------------------------- order keys

template <typename Float, typename Bits>
inline Bits FloatKey(Float value) {
  static_assert(sizeof(Float) == sizeof(Bits));
  constexpr Bits kSign = Bits(1) << (sizeof(Bits) * 8 - 1);
  if (value != value) return std::numeric_limits<Bits>::max();  // NaN
  Bits bits;
  std::memcpy(&bits, &value, sizeof(bits));
  // -0.0 -> 0.0, tested on the bits: XLA's threads treat subnormals as zero
  // (denormals-are-zero), and `value == 0` would merge them with 0.0 too.
  if ((bits & ~kSign) == 0) bits = 0;
  // IEEE order as unsigned order: flip every bit of a negative number, only
  // the sign bit of the others.
  return (bits & kSign) ? ~bits : (bits | kSign);
}

template <typename Int, typename Bits>
inline Bits IntKey(Int value) {
  using Unsigned = std::make_unsigned_t<Int>;
  Bits bits = static_cast<Bits>(static_cast<Unsigned>(value));
  if constexpr (std::is_signed_v<Int>) {
    bits ^= Bits(1) << (sizeof(Int) * 8 - 1);  // signed order as unsigned order
  }
  return bits;
}

// Whether a key is a NaN's (only floats map a value to the largest key that
// way; an integer equal to its type's largest value is a real value).
template <typename Bits>
inline bool IsNanKey(Bits key, bool floating) {
  return floating && key == std::numeric_limits<Bits>::max();
}

// Calls fn(keys_of_row) for a row: fills `keys` with the order keys of the
// row's values. Key is uint32_t for types of up to 32 bits, uint64_t above.
template <typename Key>
struct RowKeys {
  const void* data;
  ffi::DataType type;
  int64_t n;

  void Fill(int64_t row, Key* keys) const {
    switch (type) {
#define LODESTAR_CASE(DTYPE, CTYPE, FN)                                         \
  case ffi::DataType::DTYPE: {                                                  \
    const CTYPE* values = static_cast<const CTYPE*>(data) + row * n;            \
    for (int64_t i = 0; i < n; ++i) keys[i] = static_cast<Key>(FN(values[i])); \
    return;                                                                     \
  }
      LODESTAR_CASE(F32, float, (FloatKey<float, uint32_t>))
      LODESTAR_CASE(F64, double, (FloatKey<double, uint64_t>))
      LODESTAR_CASE(S8, int8_t, (IntKey<int8_t, uint32_t>))
      LODESTAR_CASE(S16, int16_t, (IntKey<int16_t, uint32_t>))
      LODESTAR_CASE(S32, int32_t, (IntKey<int32_t, uint32_t>))
      LODESTAR_CASE(S64, int64_t, (IntKey<int64_t, uint64_t>))
      LODESTAR_CASE(U8, uint8_t, (IntKey<uint8_t, uint32_t>))
      LODESTAR_CASE(U16, uint16_t, (IntKey<uint16_t, uint32_t>))
      LODESTAR_CASE(U32, uint32_t, (IntKey<uint32_t, uint32_t>))
      LODESTAR_CASE(U64, uint64_t, (IntKey<uint64_t, uint64_t>))
      LODESTAR_CASE(PRED, bool, (IntKey<uint8_t, uint32_t>))
#undef LODESTAR_CASE
      default:
        return;
    }
  }
};

bool IsFloating(ffi::DataType type) {
  return type == ffi::DataType::F32 || type == ffi::DataType::F64;
}

bool IsWide(ffi::DataType type) {
  return type == ffi::DataType::F64 || type == ffi::DataType::S64 ||
         type == ffi::DataType::U64;
}

bool IsSupported(ffi::DataType type) {
  switch (type) {
    case ffi::DataType::F32:
    case ffi::DataType::F64:
    case ffi::DataType::S8:
    case ffi::DataType::S16:
    case ffi::DataType::S32:
    case ffi::DataType::S64:
    case ffi::DataType::U8:
    case ffi::DataType::U16:
    case ffi::DataType::U32:
    case ffi::DataType::U64:
    case ffi::DataType::PRED:
      return true;
    default:
      return false;
  }
}

// ------------------------------------------------------------------- sorting

// An entry sorts by key, then by tie-break (both ascending). For keys of up
// to 32 bits both fit one 64-bit integer, which sorts fastest.
struct Packed {
  uint64_t bits;
  static Packed Make(uint32_t key, uint32_t tie) {
    return {(uint64_t(key) << 32) | tie};
  }
  uint32_t key() const { return uint32_t(bits >> 32); }
  uint32_t tie() const { return uint32_t(bits); }
  bool operator<(const Packed& other) const { return bits < other.bits; }
};

struct Wide {
  uint64_t key_bits;
  uint32_t tie_bits;
  static Wide Make(uint64_t key, uint32_t tie) { return {key, tie}; }
  uint64_t key() const { return key_bits; }
  uint32_t tie() const { return tie_bits; }
  bool operator<(const Wide& other) const {
    return key_bits < other.key_bits ||
           (key_bits == other.key_bits && tie_bits < other.tie_bits);
  }
};

template <typename Entry>
struct EntryKey {
  using type = uint64_t;
};
template <>
struct EntryKey<Packed> {
  using type = uint32_t;
};

// Short rows: insertion sort beats the general sort's set-up.
constexpr int64_t kInsertionSortMax = 24;

// A bucket sort splits a bucket of more than this many entries again, up to
// kBucketDepth times; past that it is sorted whole.
constexpr int64_t kBucketMax = 16;
constexpr int kBucketDepth = 3;

template <typename Entry>
void InsertionSort(Entry* begin, Entry* end) {
  for (Entry* i = begin + 1; i < end; ++i) {
    Entry moved = *i;
    Entry* j = i;
    for (; j > begin && moved < *(j - 1); --j) *j = *(j - 1);
    *j = moved;
  }
}

// Sorts entries by (key, tie) by distributing them over about n buckets of
// equal width in key space and sorting each bucket: a bucket still crowded
// (a float's order keys are dense where its exponent is large) is split the
// same way over its own range. About five passes over a row whose keys spread
// out, as scores do; a row of few distinct keys costs one pass per level.
template <typename Entry>
void BucketSort(Entry* begin, Entry* end, Entry* scratch, std::vector<uint32_t>* counts,
                int depth) {
  using Key = decltype(begin->key());
  const int64_t n = end - begin;
  if (n <= kBucketMax) {
    InsertionSort(begin, end);
    return;
  }
  Key lowest = begin->key(), highest = begin->key();
  for (const Entry* e = begin + 1; e < end; ++e) {
    lowest = std::min(lowest, e->key());
    highest = std::max(highest, e->key());
  }
  if (lowest == highest) return;  // one key: already in tie order
  if (depth == kBucketDepth) {
    std::sort(begin, end);
    return;
  }
  int bucket_bits = 0;
  while ((int64_t(1) << bucket_bits) < n) ++bucket_bits;
  const uint64_t range = uint64_t(highest - lowest);
  const int shift = std::max(0, (64 - __builtin_clzll(range)) - bucket_bits);
  const size_t buckets = size_t(range >> shift) + 1;
  std::vector<uint32_t>& count = counts[depth];
  count.assign(buckets + 1, 0);
  for (const Entry* e = begin; e < end; ++e) ++count[size_t(uint64_t(e->key() - lowest) >> shift) + 1];
  for (size_t b = 1; b <= buckets; ++b) count[b] += count[b - 1];
  for (const Entry* e = begin; e < end; ++e) {
    scratch[count[size_t(uint64_t(e->key() - lowest) >> shift)]++] = *e;
  }
  std::copy(scratch, scratch + n, begin);
  // count[b] is now the end of bucket b.
  for (size_t b = 0, first = 0; b < buckets; first = count[b++]) {
    if (count[b] - first > 1) {
      BucketSort(begin + first, begin + count[b], scratch + first, counts, depth + 1);
    }
  }
}

// Sorts entries by (key, tie); entries must be laid out in tie order.
// `counts` holds kBucketDepth vectors of scratch counters.
template <typename Entry>
void SortEntries(Entry* begin, Entry* end, Entry* scratch, std::vector<uint32_t>* counts) {
  if (end - begin <= kInsertionSortMax) {
    InsertionSort(begin, end);
    return;
  }
  BucketSort(begin, end, scratch, counts, 0);
}

// ------------------------------------------------------------------- threads

// Rows are handed out in blocks of about this many items: large enough that
// handing one over costs little against sorting it.
constexpr int64_t kItemsPerBlock = 1 << 14;

// Runs work(first_row, last_row) over all rows, in blocks, on the calling
// thread and up to threads - 1 of the pool's. The state the tasks share is
// reference counted: a task the pool starts after every block is done finds
// none left and touches nothing of the caller's.
template <typename Work>
void ForRowBlocks(ffi::ThreadPool* pool, int64_t rows, int64_t n, Work work) {
  if (rows <= 0) return;
  const int64_t rows_per_block =
      std::max<int64_t>(1, kItemsPerBlock / std::max<int64_t>(n, 1));
  const int64_t blocks = (rows + rows_per_block - 1) / rows_per_block;
  const int64_t helpers =
      pool == nullptr
          ? 0
          : std::min<int64_t>(blocks - 1, std::max<int64_t>(pool->num_threads(), 1));
  if (helpers <= 0) {
    work(int64_t(0), rows);
    return;
  }
  struct Shared {
    std::atomic<int64_t> next{0};
    std::atomic<int64_t> done{0};
    std::mutex mutex;
    std::condition_variable finished;
  };
  auto shared = std::make_shared<Shared>();
  // The work object lives on the caller's stack: a task may use it only for
  // a block it claimed, and the caller returns only once every claimed block
  // is done.
  auto run_blocks = [shared, blocks, rows, rows_per_block, &work]() {
    for (;;) {
      const int64_t block = shared->next.fetch_add(1);
      if (block >= blocks) return;
      const int64_t first = block * rows_per_block;
      work(first, std::min(rows, first + rows_per_block));
      if (shared->done.fetch_add(1) + 1 == blocks) {
        std::lock_guard<std::mutex> lock(shared->mutex);
        shared->finished.notify_all();
      }
    }
  };
  for (int64_t t = 0; t < helpers; ++t) {
    auto task = run_blocks;  // Schedule takes its task by value
    pool->Schedule(std::move(task));
  }
  run_blocks();
  std::unique_lock<std::mutex> lock(shared->mutex);
  shared->finished.wait(lock, [&] { return shared->done.load() == blocks; });
}

// The operand's rows and row length: every leading axis is a batch axis.
void RowsAndLength(ffi::AnyBuffer::Dimensions dims, int64_t* rows, int64_t* n) {
  *n = dims.size() == 0 ? 1 : dims.back();
  int64_t count = 1;
  for (size_t i = 0; i + 1 < dims.size(); ++i) count *= dims[i];
  *rows = dims.size() == 0 ? 1 : count;
}

ffi::Error Unsupported(ffi::DataType type) {
  return ffi::Error::InvalidArgument("lodestar kernel: unsupported element type " +
                                     std::to_string(static_cast<int>(type)));
}

// ---------------------------------------------------------------- tie blocks

// Per item: real items with a strictly higher score (above) and the size of
// its tie block (tied); padding gets above = n and tied = 1. With
// ignore_ties, ties break by descending index: above is the 0-based position
// and tied is 1.
template <typename Entry>
void TieBlocksRows(const RowKeys<typename EntryKey<Entry>::type>& source,
                   const bool* valid, int32_t* above, int32_t* tied, bool ignore_ties,
                   int64_t first, int64_t last) {
  using Key = typename EntryKey<Entry>::type;
  const int64_t n = source.n;
  std::vector<Key> keys(n);
  std::vector<Entry> entries(n), scratch(n);
  std::vector<uint32_t> counts[kBucketDepth];
  for (int64_t row = first; row < last; ++row) {
    source.Fill(row, keys.data());
    const bool* row_valid = valid + row * n;
    int32_t* row_above = above + row * n;
    int32_t* row_tied = tied + row * n;
    int64_t real = 0;
    // Descending score first; ties by descending index, laid out in that order.
    for (int64_t i = n - 1; i >= 0; --i) {
      if (row_valid[i]) {
        entries[real++] = Entry::Make(Key(~keys[i]), uint32_t(~uint32_t(i)));
      } else {
        row_above[i] = int32_t(n);
        row_tied[i] = 1;
      }
    }
    SortEntries(entries.data(), entries.data() + real, scratch.data(), counts);
    if (ignore_ties) {
      for (int64_t p = 0; p < real; ++p) {
        const uint32_t item = ~entries[p].tie();
        row_above[item] = int32_t(p);
        row_tied[item] = 1;
      }
      continue;
    }
    int64_t start = 0;
    while (start < real) {
      int64_t stop = start + 1;
      while (stop < real && entries[stop].key() == entries[start].key()) ++stop;
      for (int64_t p = start; p < stop; ++p) {
        const uint32_t item = ~entries[p].tie();
        row_above[item] = int32_t(start);
        row_tied[item] = int32_t(stop - start);
      }
      start = stop;
    }
  }
}

ffi::Error TieBlocksImpl(ffi::ThreadPool pool, ffi::AnyBuffer scores,
                         ffi::Buffer<ffi::PRED> valid, int64_t ignore_ties,
                         ffi::ResultBuffer<ffi::S32> above,
                         ffi::ResultBuffer<ffi::S32> tied) {
  const ffi::DataType type = scores.element_type();
  if (!IsSupported(type)) return Unsupported(type);
  int64_t rows, n;
  RowsAndLength(scores.dimensions(), &rows, &n);
  if (valid.element_count() != scores.element_count()) {
    return ffi::Error::InvalidArgument("lodestar tie blocks: valid and scores differ in size");
  }
  const bool* valid_data = valid.typed_data();
  int32_t* above_data = above->typed_data();
  int32_t* tied_data = tied->typed_data();
  if (IsWide(type)) {
    RowKeys<uint64_t> source{scores.untyped_data(), type, n};
    ForRowBlocks(&pool, rows, n, [&](int64_t first, int64_t last) {
      TieBlocksRows<Wide>(source, valid_data, above_data, tied_data, ignore_ties != 0,
                          first, last);
    });
  } else {
    RowKeys<uint32_t> source{scores.untyped_data(), type, n};
    ForRowBlocks(&pool, rows, n, [&](int64_t first, int64_t last) {
      TieBlocksRows<Packed>(source, valid_data, above_data, tied_data, ignore_ties != 0,
                            first, last);
    });
  }
  return ffi::Error::Success();
}

// ------------------------------------------------------------------- argsort

// Indices that sort each row ascending, equal values by ascending index (a
// stable sort); NaN last, as NumPy orders them.
template <typename Entry>
void ArgsortRows(const RowKeys<typename EntryKey<Entry>::type>& source, int32_t* order,
                 int64_t first, int64_t last) {
  using Key = typename EntryKey<Entry>::type;
  const int64_t n = source.n;
  std::vector<Key> keys(n);
  std::vector<Entry> entries(n), scratch(n);
  std::vector<uint32_t> counts[kBucketDepth];
  for (int64_t row = first; row < last; ++row) {
    source.Fill(row, keys.data());
    for (int64_t i = 0; i < n; ++i) entries[i] = Entry::Make(keys[i], uint32_t(i));
    SortEntries(entries.data(), entries.data() + n, scratch.data(), counts);
    int32_t* row_order = order + row * n;
    for (int64_t p = 0; p < n; ++p) row_order[p] = int32_t(entries[p].tie());
  }
}

ffi::Error ArgsortImpl(ffi::ThreadPool pool, ffi::AnyBuffer keys,
                       ffi::ResultBuffer<ffi::S32> order) {
  const ffi::DataType type = keys.element_type();
  if (!IsSupported(type)) return Unsupported(type);
  int64_t rows, n;
  RowsAndLength(keys.dimensions(), &rows, &n);
  int32_t* order_data = order->typed_data();
  if (IsWide(type)) {
    RowKeys<uint64_t> source{keys.untyped_data(), type, n};
    ForRowBlocks(&pool, rows, n, [&](int64_t first, int64_t last) {
      ArgsortRows<Wide>(source, order_data, first, last);
    });
  } else {
    RowKeys<uint32_t> source{keys.untyped_data(), type, n};
    ForRowBlocks(&pool, rows, n, [&](int64_t first, int64_t last) {
      ArgsortRows<Packed>(source, order_data, first, last);
    });
  }
  return ffi::Error::Success();
}

// ---------------------------------------------------------------- candidates

// The items of a row that may be among its k largest real keys (1 <= k <= n),
// in row order; returns how many. Cut into k groups of consecutive items,
// the row holds k items at least as large as the smallest group maximum (a
// group of padding alone has maximum 0, which keeps every real item), so no
// item below that bound is among the k largest, and every item equal to the
// k-th largest is kept. Branch-free: two passes over the keys.
template <typename Key>
int64_t Candidates(const Key* keys, const bool* valid, int64_t n, int64_t k, uint32_t* out) {
  Key bound = std::numeric_limits<Key>::max();
  for (int64_t group = 0; group < k; ++group) {
    const int64_t start = group * n / k, stop = (group + 1) * n / k;
    Key largest = 0;
    for (int64_t i = start; i < stop; ++i) {
      largest = std::max(largest, (valid == nullptr || valid[i]) ? keys[i] : Key(0));
    }
    bound = std::min(bound, largest);
  }
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) {
    out[count] = uint32_t(i);
    count += (valid == nullptr || valid[i]) & (keys[i] >= bound);
  }
  return count;
}

// Up to this many candidates, each one's rank among them is counted (m^2
// comparisons, branch-free and vectorised); more, and they are selected.
constexpr int64_t kCountedMax = 48;

// For each of m keys, how many of them are strictly larger (above) and equal
// (tied, itself included).
#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__)
__attribute__((target_clones("avx2", "default")))
#endif
void CountRanks32(const uint32_t* keys, int64_t m, int32_t* above, int32_t* tied) {
  for (int64_t i = 0; i < m; ++i) {
    const uint32_t key = keys[i];
    int32_t larger = 0, equal = 0;
    for (int64_t j = 0; j < m; ++j) {
      larger += keys[j] > key;
      equal += keys[j] == key;
    }
    above[i] = larger;
    tied[i] = equal;
  }
}

void CountRanks64(const uint64_t* keys, int64_t m, int32_t* above, int32_t* tied) {
  for (int64_t i = 0; i < m; ++i) {
    const uint64_t key = keys[i];
    int32_t larger = 0, equal = 0;
    for (int64_t j = 0; j < m; ++j) {
      larger += keys[j] > key;
      equal += keys[j] == key;
    }
    above[i] = larger;
    tied[i] = equal;
  }
}

inline void CountRanks(const uint32_t* keys, int64_t m, int32_t* above, int32_t* tied) {
  CountRanks32(keys, m, above, tied);
}
inline void CountRanks(const uint64_t* keys, int64_t m, int32_t* above, int32_t* tied) {
  CountRanks64(keys, m, above, tied);
}

// ------------------------------------------------------------ largest values

// Up to this k the k largest are kept in a sorted buffer while the row is
// read once; above it, a partial sort of the row's entries.
constexpr int64_t kBufferedMaxK = 64;

// The k largest values of each row, descending, NaN first (lax.top_k's
// order), and how many of the row's values equal the k-th (0 if it is NaN).
template <typename Entry, typename Value>
void LargestRows(const RowKeys<typename EntryKey<Entry>::type>& source, const Value* values,
                 int64_t k, bool floating, Value* top, int32_t* kth_count, int64_t first,
                 int64_t last) {
  using Key = typename EntryKey<Entry>::type;
  struct Slot {
    Key key;
    uint32_t item;
  };
  const int64_t n = source.n;
  std::vector<Key> keys(n);
  std::vector<Slot> buffer(k);  // descending by key
  std::vector<uint32_t> candidates(n);
  std::vector<Key> candidate_keys(kCountedMax);
  std::vector<int32_t> above(kCountedMax), tied(kCountedMax);
  std::vector<Entry> entries;
  for (int64_t row = first; row < last; ++row) {
    source.Fill(row, keys.data());
    const Value* row_values = values + row * n;
    Value* row_top = top + row * k;
    int64_t count = 0;
    const bool buffered = k <= kBufferedMaxK;
    const int64_t found = buffered ? Candidates(keys.data(), nullptr, n, k, candidates.data()) : n;
    if (buffered && found <= kCountedMax) {
      // Each candidate fills the slots of its block that lie in the top k;
      // the block covering the k-th slot is its run's length.
      for (int64_t c = 0; c < found; ++c) candidate_keys[c] = keys[candidates[c]];
      CountRanks(candidate_keys.data(), found, above.data(), tied.data());
      for (int64_t c = 0; c < found; ++c) {
        const int64_t stop = std::min<int64_t>(above[c] + tied[c], k);
        for (int64_t slot = above[c]; slot < stop; ++slot) {
          buffer[slot] = {candidate_keys[c], candidates[c]};
        }
        if (above[c] <= k - 1 && k - 1 < above[c] + tied[c]) count = tied[c];
      }
    } else if (buffered) {
      // The candidates, then the k largest of them kept in a sorted buffer.
      for (int64_t c = 0; c < found; ++c) {
        const uint32_t item = candidates[c];
        const Key key = keys[item];
        if (c >= k && key <= buffer[k - 1].key) continue;
        int64_t j = c < k ? c : k - 1;
        for (; j > 0 && buffer[j - 1].key < key; --j) buffer[j] = buffer[j - 1];
        buffer[j] = {key, item};
      }
      for (int64_t c = 0; c < found; ++c) count += keys[candidates[c]] == buffer[k - 1].key;
    } else {
      entries.resize(n);
      for (int64_t i = 0; i < n; ++i) entries[i] = Entry::Make(Key(~keys[i]), uint32_t(i));
      std::partial_sort(entries.begin(), entries.begin() + k, entries.end());
      for (int64_t j = 0; j < k; ++j) buffer[j] = {Key(~entries[j].key()), entries[j].tie()};
      for (int64_t i = 0; i < n; ++i) count += keys[i] == buffer[k - 1].key;
    }
    for (int64_t j = 0; j < k; ++j) row_top[j] = row_values[buffer[j].item];
    // The k-th value's run may continue past the top k: it was counted over
    // the candidates, which hold every item equal to it.
    kth_count[row] = IsNanKey(buffer[k - 1].key, floating) ? 0 : int32_t(count);
  }
}

template <typename Value>
ffi::Error LargestTyped(ffi::ThreadPool& pool, ffi::AnyBuffer& values, int64_t k,
                        ffi::Result<ffi::AnyBuffer>& top,
                        ffi::ResultBuffer<ffi::S32>& kth_count) {
  const ffi::DataType type = values.element_type();
  int64_t rows, n;
  RowsAndLength(values.dimensions(), &rows, &n);
  if (k < 1 || k > n) return ffi::Error::InvalidArgument("lodestar largest: k out of range");
  const Value* data = static_cast<const Value*>(values.untyped_data());
  Value* top_data = static_cast<Value*>(top->untyped_data());
  int32_t* count_data = kth_count->typed_data();
  const bool floating = IsFloating(type);
  if constexpr (sizeof(Value) == 8) {
    RowKeys<uint64_t> source{values.untyped_data(), type, n};
    ForRowBlocks(&pool, rows, n, [&](int64_t first, int64_t last) {
      LargestRows<Wide, Value>(source, data, k, floating, top_data, count_data, first, last);
    });
  } else {
    RowKeys<uint32_t> source{values.untyped_data(), type, n};
    ForRowBlocks(&pool, rows, n, [&](int64_t first, int64_t last) {
      LargestRows<Packed, Value>(source, data, k, floating, top_data, count_data, first,
                                 last);
    });
  }
  return ffi::Error::Success();
}

ffi::Error LargestImpl(ffi::ThreadPool pool, ffi::AnyBuffer values, int64_t k,
                       ffi::Result<ffi::AnyBuffer> top, ffi::ResultBuffer<ffi::S32> kth_count) {
  switch (values.element_type()) {
    case ffi::DataType::F32:
      return LargestTyped<float>(pool, values, k, top, kth_count);
    case ffi::DataType::F64:
      return LargestTyped<double>(pool, values, k, top, kth_count);
    case ffi::DataType::S8:
      return LargestTyped<int8_t>(pool, values, k, top, kth_count);
    case ffi::DataType::S16:
      return LargestTyped<int16_t>(pool, values, k, top, kth_count);
    case ffi::DataType::S32:
      return LargestTyped<int32_t>(pool, values, k, top, kth_count);
    case ffi::DataType::S64:
      return LargestTyped<int64_t>(pool, values, k, top, kth_count);
    case ffi::DataType::U8:
      return LargestTyped<uint8_t>(pool, values, k, top, kth_count);
    case ffi::DataType::U16:
      return LargestTyped<uint16_t>(pool, values, k, top, kth_count);
    case ffi::DataType::U32:
      return LargestTyped<uint32_t>(pool, values, k, top, kth_count);
    case ffi::DataType::U64:
      return LargestTyped<uint64_t>(pool, values, k, top, kth_count);
    case ffi::DataType::PRED:
      return LargestTyped<bool>(pool, values, k, top, kth_count);
    default:
      return Unsupported(values.element_type());
  }
}

// ---------------------------------------------------------- descending gains

// A value with its order key, sorted by the key alone.
template <typename Key, typename Value>
struct Keyed {
  Key order;
  Value value;
  Key key() const { return order; }
  bool operator<(const Keyed& other) const { return order < other.order; }
};

// Rows whose real values are all whole numbers below this (graded labels and
// their gains, 2^label - 1 up to label 5) are counted rather than sorted.
constexpr int kSmallGains = 64;

// Each row's real values descending, then a 0 per padding slot, then the
// real NaNs (the order of the ideal DCG's gains; see _gains.descending_gains).
template <typename Value>
void DescendingGainsRows(const Value* values, const bool* valid, Value* out, int64_t n,
                         int64_t first, int64_t last) {
  using Key = std::conditional_t<sizeof(Value) == 8, uint64_t, uint32_t>;
  using Entry = Keyed<Key, Value>;
  std::vector<Entry> real(n), scratch(n);
  std::vector<uint32_t> counts[kBucketDepth];
  for (int64_t row = first; row < last; ++row) {
    const Value* row_values = values + row * n;
    const bool* row_valid = valid + row * n;
    Value* row_out = out + row * n;
    int64_t count = 0, padding = 0;
    bool small_whole = true;  // every real value a whole number in [0, kSmallGains)
    for (int64_t i = 0; i < n; ++i) {
      const Value value = row_values[i];
      if (!row_valid[i]) {
        ++padding;
      } else if (value == value) {
        small_whole &= value >= 0 && value < Value(kSmallGains) && value == Value(int(value));
        real[count++] = {Key(~FloatKey<Value, Key>(value)), value};  // descending
      }
    }
    if (small_whole) {
      // Graded labels and their gains: counted, not sorted.
      int32_t histogram[kSmallGains] = {};
      for (int64_t p = 0; p < count; ++p) ++histogram[int(real[p].value)];
      int64_t p = 0;
      for (int gain = kSmallGains - 1; gain >= 0; --gain) {
        for (int32_t c = 0; c < histogram[gain]; ++c) row_out[p++] = Value(gain);
      }
    } else {
      SortEntries(real.data(), real.data() + count, scratch.data(), counts);
      for (int64_t p = 0; p < count; ++p) row_out[p] = real[p].value;
    }
    std::fill(row_out + count, row_out + count + padding, Value(0));
    std::fill(row_out + count + padding, row_out + n, std::numeric_limits<Value>::quiet_NaN());
  }
}

ffi::Error DescendingGainsImpl(ffi::ThreadPool pool, ffi::AnyBuffer values,
                               ffi::Buffer<ffi::PRED> valid, ffi::Result<ffi::AnyBuffer> out) {
  int64_t rows, n;
  RowsAndLength(values.dimensions(), &rows, &n);
  const bool* valid_data = valid.typed_data();
  switch (values.element_type()) {
    case ffi::DataType::F32: {
      const float* data = static_cast<const float*>(values.untyped_data());
      float* out_data = static_cast<float*>(out->untyped_data());
      ForRowBlocks(&pool, rows, n, [&](int64_t first, int64_t last) {
        DescendingGainsRows<float>(data, valid_data, out_data, n, first, last);
      });
      return ffi::Error::Success();
    }
    case ffi::DataType::F64: {
      const double* data = static_cast<const double*>(values.untyped_data());
      double* out_data = static_cast<double*>(out->untyped_data());
      ForRowBlocks(&pool, rows, n, [&](int64_t first, int64_t last) {
        DescendingGainsRows<double>(data, valid_data, out_data, n, first, last);
      });
      return ffi::Error::Success();
    }
    default:
      return Unsupported(values.element_type());
  }
}

// ------------------------------------------------------------- weighted sum

// Per row, sum_i values[i] * m[i] over the real items, m[i] being the mean of
// a positional table over the positions item i's tie block spans: the exact
// tie-averaged value of sum_p table[p] * values[item at p] (DCG, with gains
// as values and discounts as the table). `table` holds the n + 1 prefix sums
// W of the positional table. With 0 < k < n only blocks starting before k
// count (the table is zero from k on): the k largest keys are kept while the
// row is read once, and only items at or above the k-th are summed.
template <typename Entry, typename Value>
void WeightedSumRows(const RowKeys<typename EntryKey<Entry>::type>& source, const Value* values,
                     const bool* valid, const Value* table, int64_t k, Value* out,
                     int64_t first, int64_t last) {
  using Key = typename EntryKey<Entry>::type;
  const int64_t n = source.n;
  std::vector<Key> keys(n);
  std::vector<Entry> entries(n), scratch(n);
  std::vector<uint32_t> counts[kBucketDepth];
  std::vector<Key> top(k > 0 ? k : 0);  // descending
  std::vector<Value> slot_mean(k > 0 ? k : 0);
  std::vector<uint32_t> candidates(n);
  std::vector<Key> candidate_keys(kCountedMax);
  std::vector<int32_t> above(kCountedMax), tied(kCountedMax);
  auto mean = [&](int64_t start, int64_t size) {
    const int64_t stop = std::min(start + size, n);
    return (table[stop] - table[std::min(start, n)]) / Value(size);
  };
  for (int64_t row = first; row < last; ++row) {
    source.Fill(row, keys.data());
    const Value* row_values = values + row * n;
    const bool* row_valid = valid + row * n;
    Value total = 0;
    if (k <= 0) {
      int64_t real = 0;
      for (int64_t i = n - 1; i >= 0; --i) {
        if (row_valid[i]) entries[real++] = Entry::Make(Key(~keys[i]), uint32_t(i));
      }
      SortEntries(entries.data(), entries.data() + real, scratch.data(), counts);
      int64_t start = 0;
      while (start < real) {
        int64_t stop = start + 1;
        while (stop < real && entries[stop].key() == entries[start].key()) ++stop;
        const Value block_mean = mean(start, stop - start);
        for (int64_t p = start; p < stop; ++p) total += row_values[entries[p].tie()] * block_mean;
        start = stop;
      }
      out[row] = total;
      continue;
    }
    // The k largest keys of the real items (fewer if the row has fewer),
    // picked from the candidates, which hold every item at or above the k-th.
    const int64_t found = Candidates(keys.data(), row_valid, n, k, candidates.data());
    if (found <= kCountedMax) {
      // Each candidate's block from its rank among them: every item above a
      // candidate, and every item tied with it, is a candidate too.
      for (int64_t c = 0; c < found; ++c) candidate_keys[c] = keys[candidates[c]];
      CountRanks(candidate_keys.data(), found, above.data(), tied.data());
      for (int64_t c = 0; c < found; ++c) {
        if (above[c] < k) total += row_values[candidates[c]] * mean(above[c], tied[c]);
      }
      out[row] = total;
      continue;
    }
    int64_t kept = 0;
    for (int64_t c = 0; c < found; ++c) {
      const Key key = keys[candidates[c]];
      if (kept == k && key <= top[k - 1]) continue;
      int64_t j = kept < k ? kept++ : k - 1;
      for (; j > 0 && top[j - 1] < key; --j) top[j] = top[j - 1];
      top[j] = key;
    }
    if (kept == 0) {
      out[row] = 0;
      continue;
    }
    // A run of equal keys in the top is a block; the last one's block may
    // continue past the top k, so it is counted over the candidates.
    const Key threshold = top[kept - 1];
    int64_t at_threshold = 0;
    for (int64_t c = 0; c < found; ++c) at_threshold += keys[candidates[c]] == threshold;
    for (int64_t start = 0; start < kept;) {
      int64_t stop = start + 1;
      while (stop < kept && top[stop] == top[start]) ++stop;
      const int64_t size = top[start] == threshold ? at_threshold : stop - start;
      const Value block_mean = mean(start, size);
      for (int64_t p = start; p < stop; ++p) slot_mean[p] = block_mean;
      start = stop;
    }
    for (int64_t c = 0; c < found; ++c) {
      const uint32_t item = candidates[c];
      const Key key = keys[item];
      if (key < threshold) continue;
      // The slot of the first top key equal to this one (top is descending).
      int64_t slot = 0;
      while (top[slot] > key) ++slot;
      total += row_values[item] * slot_mean[slot];
    }
    out[row] = total;
  }
}

template <typename Value>
ffi::Error WeightedSumTyped(ffi::ThreadPool& pool, ffi::AnyBuffer& scores,
                           ffi::AnyBuffer& values, ffi::Buffer<ffi::PRED>& valid,
                           ffi::AnyBuffer& table, int64_t k, ffi::Result<ffi::AnyBuffer>& out) {
  const ffi::DataType type = scores.element_type();
  int64_t rows, n;
  RowsAndLength(scores.dimensions(), &rows, &n);
  if (values.element_count() != scores.element_count() ||
      valid.element_count() != scores.element_count() ||
      table.element_count() != static_cast<size_t>(n + 1)) {
    return ffi::Error::InvalidArgument("lodestar weighted sum: operands of different sizes");
  }
  const Value* value_data = static_cast<const Value*>(values.untyped_data());
  const Value* table_data = static_cast<const Value*>(table.untyped_data());
  const bool* valid_data = valid.typed_data();
  Value* out_data = static_cast<Value*>(out->untyped_data());
  if (k >= n) k = 0;
  if (IsWide(type)) {
    RowKeys<uint64_t> source{scores.untyped_data(), type, n};
    ForRowBlocks(&pool, rows, n, [&](int64_t first, int64_t last) {
      WeightedSumRows<Wide, Value>(source, value_data, valid_data, table_data, k, out_data,
                                   first, last);
    });
  } else {
    RowKeys<uint32_t> source{scores.untyped_data(), type, n};
    ForRowBlocks(&pool, rows, n, [&](int64_t first, int64_t last) {
      WeightedSumRows<Packed, Value>(source, value_data, valid_data, table_data, k, out_data,
                                     first, last);
    });
  }
  return ffi::Error::Success();
}

ffi::Error WeightedSumImpl(ffi::ThreadPool pool, ffi::AnyBuffer scores, ffi::AnyBuffer values,
                           ffi::Buffer<ffi::PRED> valid, ffi::AnyBuffer table, int64_t k,
                           ffi::Result<ffi::AnyBuffer> out) {
  if (!IsSupported(scores.element_type())) return Unsupported(scores.element_type());
  if (values.element_type() != table.element_type() ||
      values.element_type() != out->element_type()) {
    return ffi::Error::InvalidArgument("lodestar weighted sum: values and table differ in type");
  }
  switch (values.element_type()) {
    case ffi::DataType::F32:
      return WeightedSumTyped<float>(pool, scores, values, valid, table, k, out);
    case ffi::DataType::F64:
      return WeightedSumTyped<double>(pool, scores, values, valid, table, k, out);
    default:
      return Unsupported(values.element_type());
  }
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(LodestarTieBlocks, TieBlocksImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::Buffer<ffi::PRED>>()
                                  .Attr<int64_t>("ignore_ties")
                                  .Ret<ffi::Buffer<ffi::S32>>()
                                  .Ret<ffi::Buffer<ffi::S32>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(LodestarArgsort, ArgsortImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::Buffer<ffi::S32>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(LodestarLargest, LargestImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Attr<int64_t>("k")
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::Buffer<ffi::S32>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(LodestarWeightedSum, WeightedSumImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::Buffer<ffi::PRED>>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Attr<int64_t>("k")
                                  .Ret<ffi::AnyBuffer>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(LodestarDescendingGains, DescendingGainsImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::Buffer<ffi::PRED>>()
                                  .Ret<ffi::AnyBuffer>());

// ------------------------------------------------------------ Python module

namespace {

PyObject* Targets(PyObject*, PyObject*) {
  struct Target {
    const char* name;
    void* handler;
  };
  const Target targets[] = {
      {"lodestar_tie_blocks", reinterpret_cast<void*>(LodestarTieBlocks)},
      {"lodestar_argsort", reinterpret_cast<void*>(LodestarArgsort)},
      {"lodestar_largest", reinterpret_cast<void*>(LodestarLargest)},
      {"lodestar_descending_gains", reinterpret_cast<void*>(LodestarDescendingGains)},
      {"lodestar_weighted_sum", reinterpret_cast<void*>(LodestarWeightedSum)},
  };
  PyObject* dict = PyDict_New();
  if (dict == nullptr) return nullptr;
  for (const Target& target : targets) {
    PyObject* capsule = PyCapsule_New(target.handler, nullptr, nullptr);
    if (capsule == nullptr || PyDict_SetItemString(dict, target.name, capsule) != 0) {
      Py_XDECREF(capsule);
      Py_DECREF(dict);
      return nullptr;
    }
    Py_DECREF(capsule);
  }
  return dict;
}

PyMethodDef kMethods[] = {
    {"targets", Targets, METH_NOARGS,
     "The XLA FFI handlers, as a dict of target name -> PyCapsule."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef kModule = {
    PyModuleDef_HEAD_INIT,
    "_kernels",
    "lodestar's compiled CPU kernels (XLA FFI).",
    -1,
    kMethods,
    nullptr,
    nullptr,
    nullptr,
    nullptr,
};

}  // namespace

PyMODINIT_FUNC PyInit__kernels(void) { return PyModule_Create(&kModule); }
