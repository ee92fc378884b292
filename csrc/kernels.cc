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
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <type_traits>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

// FloatKey<float, uint32_t> in integer operations without branches, which
// vectorise: the key of every float32 score passes through here.
inline uint32_t FloatKey32(float value) {
  constexpr uint32_t kSign = 0x80000000u, kInfinity = 0x7f800000u;
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  const uint32_t magnitude = bits & ~kSign;
  const uint32_t merged = magnitude == 0 ? 0 : bits;  // -0.0 -> 0.0
  const uint32_t flip = uint32_t(int32_t(merged) >> 31) | kSign;
  return magnitude > kInfinity ? std::numeric_limits<uint32_t>::max() : merged ^ flip;
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

  // With `valid` (the row's mask), the keys of padding are 0: below every
  // real key but the smallest integer's, which Candidates allows for.
  void Fill(int64_t row, Key* keys, const bool* valid = nullptr) const {
    FillKeys(row, keys);
    // Most rows have no padding: one scan for a false finds that out.
    if (valid != nullptr && std::memchr(valid, 0, size_t(n)) != nullptr) {
      for (int64_t i = 0; i < n; ++i) keys[i] &= Key(0) - Key(valid[i]);
    }
  }

  void FillKeys(int64_t row, Key* keys) const {
    switch (type) {
#define LODESTAR_CASE(DTYPE, CTYPE, FN)                                         \
  case ffi::DataType::DTYPE: {                                                  \
    const CTYPE* values = static_cast<const CTYPE*>(data) + row * n;            \
    for (int64_t i = 0; i < n; ++i) keys[i] = static_cast<Key>(FN(values[i])); \
    return;                                                                     \
  }
      LODESTAR_CASE(F32, float, (FloatKey32))
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
// thread and up to threads - 1 of the pool's: as many workers as the pool has
// threads (one more competed for the cores, and was 1.5x slower on two).
// The state the tasks share is reference counted: a task the pool starts
// after every block is done finds none left and touches nothing of the
// caller's.
template <typename Work>
void ForRowBlocks(ffi::ThreadPool* pool, int64_t rows, int64_t n, Work work) {
  if (rows <= 0) return;
  const int64_t rows_per_block =
      std::max<int64_t>(1, kItemsPerBlock / std::max<int64_t>(n, 1));
  const int64_t blocks = (rows + rows_per_block - 1) / rows_per_block;
  const int64_t helpers =
      pool == nullptr
          ? 0
          : std::min<int64_t>(blocks - 1, std::max<int64_t>(pool->num_threads() - 1, 0));
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

// ------------------------------------------------------------ counting

// The hottest loops are compiled twice on x86-64 Linux: for AVX2 (unsigned
// maxima and comparisons of eight keys at once) and for the baseline, the
// loader picking one for the machine.
#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__)
#define LODESTAR_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define LODESTAR_VECTOR_CLONES
#endif

// Up to this many real items, a row's blocks are counted rather than sorted:
// each item that carries a value compares its key with every real key.
constexpr int64_t kCountedRowMax = 256;

// For each of `count` chosen keys, how many of the m keys are strictly larger
// (above) and equal (tied). Keys are signed (unsigned order keys with the
// sign bit flipped), which the vector units compare; the counters are as wide
// as the keys, so a key and its counter share a lane.
template <typename Signed>
inline void CountChosenOf(const Signed* keys, int64_t m, const Signed* chosen, int64_t count,
                          int32_t* above, int32_t* tied) {
  int64_t c = 0;
  for (; c + 4 <= count; c += 4) {
    const Signed k0 = chosen[c], k1 = chosen[c + 1], k2 = chosen[c + 2], k3 = chosen[c + 3];
    Signed a0 = 0, a1 = 0, a2 = 0, a3 = 0, t0 = 0, t1 = 0, t2 = 0, t3 = 0;
    for (int64_t j = 0; j < m; ++j) {
      const Signed other = keys[j];
      a0 += other > k0; t0 += other == k0;
      a1 += other > k1; t1 += other == k1;
      a2 += other > k2; t2 += other == k2;
      a3 += other > k3; t3 += other == k3;
    }
    above[c] = int32_t(a0); above[c + 1] = int32_t(a1);
    above[c + 2] = int32_t(a2); above[c + 3] = int32_t(a3);
    tied[c] = int32_t(t0); tied[c + 1] = int32_t(t1);
    tied[c + 2] = int32_t(t2); tied[c + 3] = int32_t(t3);
  }
  for (; c < count; ++c) {
    const Signed key = chosen[c];
    Signed larger = 0, equal = 0;
    for (int64_t j = 0; j < m; ++j) {
      larger += keys[j] > key;
      equal += keys[j] == key;
    }
    above[c] = int32_t(larger);
    tied[c] = int32_t(equal);
  }
}

LODESTAR_VECTOR_CLONES
void CountChosen(const int32_t* keys, int64_t m, const int32_t* chosen, int64_t count,
                 int32_t* above, int32_t* tied) {
  CountChosenOf(keys, m, chosen, count, above, tied);
}

LODESTAR_VECTOR_CLONES
void CountChosen(const int64_t* keys, int64_t m, const int64_t* chosen, int64_t count,
                 int32_t* above, int32_t* tied) {
  CountChosenOf(keys, m, chosen, count, above, tied);
}

// ---------------------------------------------------------------- tie blocks

// Each block's counts, read off `count` entries sorted by key, for the blocks
// starting before `limit`; an entry's item is the complement of its tie-break.
template <typename Entry>
void WriteSortedBlocks(const Entry* entries, int64_t count, int64_t limit, int32_t* above,
                       int32_t* tied) {
  for (int64_t start = 0; start < count && start < limit;) {
    int64_t stop = start + 1;
    while (stop < count && entries[stop].key() == entries[start].key()) ++stop;
    for (int64_t p = start; p < stop; ++p) {
      const uint32_t item = ~entries[p].tie();
      above[item] = int32_t(start);
      tied[item] = int32_t(stop - start);
    }
    start = stop;
  }
}

// Checks a tie-block kernel's operands and runs rows(Entry{}, source, first,
// last) over the batch's rows, with the entries and keys of the scores' type.
template <typename Rows>
ffi::Error RunTieBlocks(ffi::ThreadPool& pool, ffi::AnyBuffer& scores,
                        ffi::Buffer<ffi::PRED>& valid, const char* name, Rows rows) {
  const ffi::DataType type = scores.element_type();
  if (!IsSupported(type)) return Unsupported(type);
  int64_t batch_rows, n;
  RowsAndLength(scores.dimensions(), &batch_rows, &n);
  if (valid.element_count() != scores.element_count()) {
    return ffi::Error::InvalidArgument(std::string(name) + ": valid and scores differ in size");
  }
  if (IsWide(type)) {
    RowKeys<uint64_t> source{scores.untyped_data(), type, n};
    ForRowBlocks(&pool, batch_rows, n,
                 [&](int64_t first, int64_t last) { rows(Wide{}, source, first, last); });
  } else {
    RowKeys<uint32_t> source{scores.untyped_data(), type, n};
    ForRowBlocks(&pool, batch_rows, n,
                 [&](int64_t first, int64_t last) { rows(Packed{}, source, first, last); });
  }
  return ffi::Error::Success();
}

// Per item: real items with a strictly higher score (above) and the size of
// its tie block (tied); padding gets above = n and tied = 1. With
// ignore_ties, ties break by descending index: above is the 0-based position
// and tied is 1.
template <typename Entry>
void TieBlocksRows(const RowKeys<typename EntryKey<Entry>::type>& source,
                   const bool* valid, int32_t* above, int32_t* tied, bool ignore_ties,
                   int64_t first, int64_t last) {
  using Key = typename EntryKey<Entry>::type;
  using Signed = std::make_signed_t<Key>;
  constexpr Key kSign = Key(1) << (sizeof(Key) * 8 - 1);
  const int64_t n = source.n;
  const bool counted = !ignore_ties && n <= kCountedRowMax;
  std::vector<Key> keys(n);
  std::vector<Entry> entries(n), scratch(n);
  std::vector<uint32_t> counts[kBucketDepth];
  std::vector<Signed> real_keys(counted ? n : 0);
  std::vector<uint32_t> items(counted ? n : 0);
  std::vector<int32_t> real_above(counted ? n : 0), real_tied(counted ? n : 0);
  for (int64_t row = first; row < last; ++row) {
    source.Fill(row, keys.data());
    const bool* row_valid = valid + row * n;
    int32_t* row_above = above + row * n;
    int32_t* row_tied = tied + row * n;
    int64_t real = 0;
    if (counted) {
      // Short rows: every real item's counts, compared with every real key.
      for (int64_t i = 0; i < n; ++i) {
        real_keys[real] = Signed(keys[i] ^ kSign);
        items[real] = uint32_t(i);
        real += row_valid[i];
        row_above[i] = int32_t(n);
        row_tied[i] = 1;
      }
      CountChosen(real_keys.data(), real, real_keys.data(), real, real_above.data(),
                  real_tied.data());
      for (int64_t c = 0; c < real; ++c) {
        row_above[items[c]] = real_above[c];
        row_tied[items[c]] = real_tied[c];
      }
      continue;
    }
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
    WriteSortedBlocks(entries.data(), real, real, row_above, row_tied);
  }
}

ffi::Error TieBlocksImpl(ffi::ThreadPool pool, ffi::AnyBuffer scores,
                         ffi::Buffer<ffi::PRED> valid, int64_t ignore_ties,
                         ffi::ResultBuffer<ffi::S32> above,
                         ffi::ResultBuffer<ffi::S32> tied) {
  const bool* valid_data = valid.typed_data();
  int32_t* above_data = above->typed_data();
  int32_t* tied_data = tied->typed_data();
  return RunTieBlocks(pool, scores, valid, "lodestar tie blocks",
                      [&](auto entry, const auto& source, int64_t first, int64_t last) {
                        TieBlocksRows<decltype(entry)>(source, valid_data, above_data, tied_data,
                                                       ignore_ties != 0, first, last);
                      });
}

// -------------------------------------------------------------- block totals

// Per item, the sum of `values` over the blocks above its own and over its
// own, a block named by its first position `above` (padding's is n: a bin
// after every real block). One pass adds each value into its block's bin,
// one pass turns the bins into running totals, one reads them off.
template <typename Value>
void BlockTotalsRows(const Value* values, const int32_t* above, int64_t n, Value* out_above,
                     Value* out_within, int64_t first, int64_t last) {
  std::vector<Value> within(n + 1), earlier(n + 1);
  for (int64_t row = first; row < last; ++row) {
    const Value* row_values = values + row * n;
    const int32_t* row_above = above + row * n;
    std::fill(within.begin(), within.end(), Value(0));
    for (int64_t i = 0; i < n; ++i) {
      within[std::clamp<int64_t>(row_above[i], 0, n)] += row_values[i];
    }
    Value running = 0;
    for (int64_t b = 0; b <= n; ++b) {
      earlier[b] = running;
      running += within[b];
    }
    Value* row_out_above = out_above + row * n;
    Value* row_out_within = out_within + row * n;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t bin = std::clamp<int64_t>(row_above[i], 0, n);
      row_out_above[i] = earlier[bin];
      row_out_within[i] = within[bin];
    }
  }
}

template <typename Value>
void BlockTotalsTyped(ffi::ThreadPool& pool, ffi::AnyBuffer& values, const int32_t* above,
                      int64_t rows, int64_t n, ffi::Result<ffi::AnyBuffer>& out_above,
                      ffi::Result<ffi::AnyBuffer>& out_within) {
  const Value* value_data = static_cast<const Value*>(values.untyped_data());
  Value* above_data = static_cast<Value*>(out_above->untyped_data());
  Value* within_data = static_cast<Value*>(out_within->untyped_data());
  ForRowBlocks(&pool, rows, n, [&](int64_t first, int64_t last) {
    BlockTotalsRows<Value>(value_data, above, n, above_data, within_data, first, last);
  });
}

ffi::Error BlockTotalsImpl(ffi::ThreadPool pool, ffi::AnyBuffer values,
                           ffi::Buffer<ffi::S32> above, ffi::Result<ffi::AnyBuffer> out_above,
                           ffi::Result<ffi::AnyBuffer> out_within) {
  const ffi::DataType type = values.element_type();
  if (above.element_count() != values.element_count() ||
      out_above->element_type() != type || out_within->element_type() != type) {
    return ffi::Error::InvalidArgument("lodestar block totals: operands differ");
  }
  int64_t rows, n;
  RowsAndLength(values.dimensions(), &rows, &n);
  const int32_t* above_data = above.typed_data();
  switch (type) {
    case ffi::DataType::S32:
      BlockTotalsTyped<int32_t>(pool, values, above_data, rows, n, out_above, out_within);
      return ffi::Error::Success();
    case ffi::DataType::F32:
      BlockTotalsTyped<float>(pool, values, above_data, rows, n, out_above, out_within);
      return ffi::Error::Success();
    case ffi::DataType::F64:
      BlockTotalsTyped<double>(pool, values, above_data, rows, n, out_above, out_within);
      return ffi::Error::Success();
    default:
      return Unsupported(type);
  }
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

// Bit j set where keys[j] >= bound, for count <= 64 keys.
template <typename Key>
inline uint64_t MarkAtLeast(const Key* keys, int64_t count, Key bound) {
  uint64_t marked = 0;
  for (int64_t j = 0; j < count; ++j) marked |= uint64_t(keys[j] >= bound) << j;
  return marked;
}

#if defined(__SSE2__)
// Four keys to a comparison (SSE2 is part of every x86-64): unsigned order
// is signed order after flipping the sign bits.
template <>
inline uint64_t MarkAtLeast<uint32_t>(const uint32_t* keys, int64_t count, uint32_t bound) {
  const __m128i sign = _mm_set1_epi32(std::numeric_limits<int32_t>::min());
  const __m128i signed_bound = _mm_xor_si128(_mm_set1_epi32(int32_t(bound)), sign);
  uint64_t below = 0;
  int64_t j = 0;
  for (; j + 4 <= count; j += 4) {
    const __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(keys + j));
    const __m128i is_below = _mm_cmpgt_epi32(signed_bound, _mm_xor_si128(block, sign));
    below |= uint64_t(_mm_movemask_ps(_mm_castsi128_ps(is_below))) << j;
  }
  uint64_t marked = j == 64 ? ~below : ~below & ((uint64_t(1) << j) - 1);
  for (; j < count; ++j) marked |= uint64_t(keys[j] >= bound) << j;
  return marked;
}
#endif

// The items of a row that may be among its k largest real keys (1 <= k <= n),
// in row order; returns how many. With `valid`, the keys of padding must be 0
// (RowKeys::Fill). Cut into k groups, the row holds k items at least as large
// as the smallest group maximum, so no item below that bound is among the k
// largest, and every item equal to the k-th largest is kept. Group j holds
// the items i with i % k == j: the maxima are an element-wise maximum of the
// row's consecutive k-item chunks, which vectorises. A bound of 0 (a group of
// padding alone, or a real key of 0) keeps every real item.
template <typename Key>
inline int64_t CandidatesOf(const Key* keys, const bool* valid, int64_t n, int64_t k,
                            Key* maxima, uint32_t* out) {
  std::fill(maxima, maxima + k, Key(0));
  int64_t chunk = 0;
  for (; chunk + k <= n; chunk += k) {
    const Key* chunk_keys = keys + chunk;
    for (int64_t j = 0; j < k; ++j) maxima[j] = std::max(maxima[j], chunk_keys[j]);
  }
  for (int64_t j = 0; chunk + j < n; ++j) maxima[j] = std::max(maxima[j], keys[chunk + j]);
  Key bound = maxima[0];
  for (int64_t j = 1; j < k; ++j) bound = std::min(bound, maxima[j]);
  int64_t count = 0;
  if (bound == 0) {
    for (int64_t i = 0; i < n; ++i) {
      out[count] = uint32_t(i);
      count += valid == nullptr || valid[i];
    }
    return count;
  }
  // Padding's key 0 is below the bound. The survivors of 64 items at a time
  // are marked in a word and read off it, a step per survivor.
  for (int64_t base = 0; base < n; base += 64) {
    uint64_t marked = MarkAtLeast(keys + base, std::min<int64_t>(64, n - base), bound);
    for (; marked != 0; marked &= marked - 1) {
      out[count++] = uint32_t(base + __builtin_ctzll(marked));
    }
  }
  return count;
}

LODESTAR_VECTOR_CLONES
int64_t Candidates(const uint32_t* keys, const bool* valid, int64_t n, int64_t k,
                   uint32_t* maxima, uint32_t* out) {
  return CandidatesOf(keys, valid, n, k, maxima, out);
}

LODESTAR_VECTOR_CLONES
int64_t Candidates(const uint64_t* keys, const bool* valid, int64_t n, int64_t k,
                   uint64_t* maxima, uint32_t* out) {
  return CandidatesOf(keys, valid, n, k, maxima, out);
}

// Up to this many candidates, each one's rank among them is counted (m^2
// comparisons, branch-free and vectorised); more, and they are selected.
constexpr int64_t kCountedMax = 64;

// More than this many candidates per place in the top, and they are bounded
// again among themselves before they are ranked.
constexpr int64_t kRefineAbove = 2;

// The candidates for a row's k largest keys (Candidates), bounded a second
// time among themselves when many survive: their items in `candidates` and
// their keys in `candidate_keys`; returns how many. `maxima` and `kept` are
// scratch of n entries.
template <typename Key>
int64_t TopCandidates(const Key* keys, const bool* valid, int64_t n, int64_t k, Key* maxima,
                      uint32_t* kept, uint32_t* candidates, Key* candidate_keys) {
  int64_t found = Candidates(keys, valid, n, k, maxima, candidates);
  for (int64_t c = 0; c < found; ++c) candidate_keys[c] = keys[candidates[c]];
  if (found >= kRefineAbove * k) {
    // The same bound again, over the candidates alone (all real): it is
    // tighter, and ranking them costs the square of their number.
    const int64_t still = Candidates(candidate_keys, nullptr, found, k, maxima, kept);
    for (int64_t c = 0; c < still; ++c) {
      candidates[c] = candidates[kept[c]];
      candidate_keys[c] = candidate_keys[kept[c]];
    }
    found = still;
  }
  return found;
}

// For each of m keys, how many of them are strictly larger (above) and equal
// (tied, itself included). The inner loop runs over the counted keys, so the
// counts vectorise and nothing is summed across lanes (blocks of eight kept
// in registers measured slower).
template <typename Key>
inline void CountRanksOf(const Key* keys, int64_t m, int32_t* above, int32_t* tied) {
  std::fill(above, above + m, 0);
  std::fill(tied, tied + m, 0);
  for (int64_t j = 0; j < m; ++j) {
    const Key other = keys[j];
    for (int64_t i = 0; i < m; ++i) {
      above[i] += other > keys[i];
      tied[i] += other == keys[i];
    }
  }
}

LODESTAR_VECTOR_CLONES
void CountRanks(const uint32_t* keys, int64_t m, int32_t* above, int32_t* tied) {
  CountRanksOf(keys, m, above, tied);
}

LODESTAR_VECTOR_CLONES
void CountRanks(const uint64_t* keys, int64_t m, int32_t* above, int32_t* tied) {
  CountRanksOf(keys, m, above, tied);
}

// -------------------------------------------------------- top tie blocks

// tie_blocks with averaged ties and a cut-off 0 < k < n: exact counts for every
// item whose block starts before k, which are the candidates for the k
// largest keys ranked among themselves (every item above or tied with a
// candidate is one); every other real item gets above = k, tied = 1, and
// padding n and 1, as XLA's top-k route gives them.
template <typename Entry>
void TopTieBlocksRows(const RowKeys<typename EntryKey<Entry>::type>& source, const bool* valid,
                      int64_t k, int32_t* above, int32_t* tied, int64_t first, int64_t last) {
  using Key = typename EntryKey<Entry>::type;
  const int64_t n = source.n;
  std::vector<Key> keys(n), maxima(n), candidate_keys(n);
  std::vector<uint32_t> candidates(n), kept(n);
  std::vector<int32_t> ranks_above(std::max(kCountedMax, n)), ranks_tied(std::max(kCountedMax, n));
  std::vector<Entry> entries(n), scratch(n);
  std::vector<uint32_t> counts[kBucketDepth];
  for (int64_t row = first; row < last; ++row) {
    const bool* row_valid = valid + row * n;
    int32_t* row_above = above + row * n;
    int32_t* row_tied = tied + row * n;
    source.Fill(row, keys.data(), row_valid);
    for (int64_t i = 0; i < n; ++i) {
      row_above[i] = row_valid[i] ? int32_t(k) : int32_t(n);
      row_tied[i] = 1;
    }
    const int64_t found = TopCandidates(keys.data(), row_valid, n, k, maxima.data(), kept.data(),
                                        candidates.data(), candidate_keys.data());
    if (found <= kCountedMax) {
      CountRanks(candidate_keys.data(), found, ranks_above.data(), ranks_tied.data());
      for (int64_t c = 0; c < found; ++c) {
        if (ranks_above[c] < k) {
          row_above[candidates[c]] = ranks_above[c];
          row_tied[candidates[c]] = ranks_tied[c];
        }
      }
      continue;
    }
    // Many candidates (a long run of ties at the k-th key): sorted, their
    // blocks read off in order until one starts at k.
    for (int64_t c = 0; c < found; ++c) {
      entries[c] = Entry::Make(Key(~candidate_keys[c]), ~candidates[c]);
    }
    SortEntries(entries.data(), entries.data() + found, scratch.data(), counts);
    WriteSortedBlocks(entries.data(), found, k, row_above, row_tied);
  }
}

ffi::Error TopTieBlocksImpl(ffi::ThreadPool pool, ffi::AnyBuffer scores,
                            ffi::Buffer<ffi::PRED> valid, int64_t k,
                            ffi::ResultBuffer<ffi::S32> above,
                            ffi::ResultBuffer<ffi::S32> tied) {
  int64_t rows, n;
  RowsAndLength(scores.dimensions(), &rows, &n);
  if (k <= 0 || k >= n) {
    return ffi::Error::InvalidArgument("lodestar top tie blocks: k must be in [1, n)");
  }
  const bool* valid_data = valid.typed_data();
  int32_t* above_data = above->typed_data();
  int32_t* tied_data = tied->typed_data();
  return RunTieBlocks(pool, scores, valid, "lodestar top tie blocks",
                      [&](auto entry, const auto& source, int64_t first, int64_t last) {
                        TopTieBlocksRows<decltype(entry)>(source, valid_data, k, above_data,
                                                          tied_data, first, last);
                      });
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
  std::vector<Key> maxima(n);
  std::vector<Key> candidate_keys(kCountedMax);
  std::vector<int32_t> above(kCountedMax), tied(kCountedMax);
  std::vector<Entry> entries;
  for (int64_t row = first; row < last; ++row) {
    source.Fill(row, keys.data());
    const Value* row_values = values + row * n;
    Value* row_top = top + row * k;
    int64_t count = 0;
    const bool buffered = k <= kBufferedMaxK;
    const int64_t found =
        buffered ? Candidates(keys.data(), nullptr, n, k, maxima.data(), candidates.data()) : n;
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

// The ideal counts this many gains, the largest, in a pass each; the others
// in a histogram.
constexpr int kCountedGains = 8;

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

// Sums over one row at a time, with the scratch space of one thread.
//
// sum_i values[i] * m[i] over the real items, m[i] being the mean of a
// positional table over the positions item i's tie block spans: the exact
// tie-averaged value of sum_p table[p] * values[item at p] (DCG, with gains
// as values and discounts as the table). `table` holds the n + 1 prefix sums
// W of the positional table. With 0 < k < n only blocks starting before k
// count (the table is zero from k on), and only the candidates for the k
// largest keys are looked at.
template <typename Entry, typename Value>
class RowSums {
 public:
  using Key = typename EntryKey<Entry>::type;
  using Signed = std::make_signed_t<Key>;

  RowSums(int64_t n, int64_t k)
      : n_(n), k_(k), keys_(n), entries_(n), scratch_(n), candidates_(n),
        kept_(n), maxima_(n), candidate_keys_(n), real_keys_(k > 0 ? 0 : n),
        chosen_keys_(k > 0 ? 0 : n), above_(std::max(kCountedMax, n)),
        tied_(std::max(kCountedMax, n)), top_(k > 0 ? k : 0), slot_mean_(k > 0 ? k : 0) {}

  // `table` holds the n + 1 prefix sums for this row (under vmap a table may
  // vary with the row).
  void UseTable(const Value* table) { table_ = table; }

  // `keys` are the row's order keys, padding's 0 (RowKeys::Fill with valid).
  Value Sum(const Key* keys, const bool* valid, const Value* values) {
    return k_ > 0 ? Top(keys, valid, values) : Full(keys, valid, values);
  }

 private:
  Value Mean(int64_t start, int64_t size) const {
    const int64_t stop = std::min(start + size, n_);
    return (table_[stop] - table_[std::min(start, n_)]) / Value(size);
  }

  // Whole rows: short ones counted, longer ones sorted and their blocks read
  // off in order.
  Value Full(const Key* keys, const bool* valid, const Value* values) {
    if (n_ <= kCountedRowMax) return Counted(keys, valid, values);
    Entry* entries = entries_.data();
    int64_t real = 0;
    for (int64_t i = n_ - 1; i >= 0; --i) {
      if (valid == nullptr || valid[i]) entries[real++] = Entry::Make(Key(~keys[i]), uint32_t(i));
    }
    SortEntries(entries, entries + real, scratch_.data(), counts_);
    Value total = 0;
    for (int64_t start = 0; start < real;) {
      int64_t stop = start + 1;
      while (stop < real && entries[stop].key() == entries[start].key()) ++stop;
      const Value block_mean = Mean(start, stop - start);
      for (int64_t p = start; p < stop; ++p) total += values[entries[p].tie()] * block_mean;
      start = stop;
    }
    return total;
  }

  // A whole row by counting: the real keys, and the items whose value is not
  // 0 (the others add nothing), gathered without branches.
  Value Counted(const Key* keys, const bool* valid, const Value* values) {
    constexpr Key kSign = Key(1) << (sizeof(Key) * 8 - 1);
    Signed* real_keys = real_keys_.data();
    Signed* chosen_keys = chosen_keys_.data();
    uint32_t* chosen = candidates_.data();
    int64_t real = 0, count = 0;
    for (int64_t i = 0; i < n_; ++i) {
      const Signed key = Signed(keys[i] ^ kSign);
      const bool is_real = valid == nullptr || valid[i];
      real_keys[real] = key;
      real += is_real;
      chosen_keys[count] = key;
      chosen[count] = uint32_t(i);
      count += is_real && values[i] != Value(0);
    }
    int32_t* above = above_.data();
    int32_t* tied = tied_.data();
    CountChosen(real_keys, real, chosen_keys, count, above, tied);
    Value total = 0;
    for (int64_t c = 0; c < count; ++c) total += values[chosen[c]] * Mean(above[c], tied[c]);
    return total;
  }

  // The top k: the candidates, ranked by counting when few, else selected.
  Value Top(const Key* keys, const bool* valid, const Value* values) {
    const int64_t k = k_;
    uint32_t* candidates = candidates_.data();
    Key* candidate_keys = candidate_keys_.data();
    const int64_t found = TopCandidates(keys, valid, n_, k, maxima_.data(), kept_.data(),
                                        candidates, candidate_keys);
    Value total = 0;
    if (found <= kCountedMax) {
      // Each candidate's block from its rank among them: every item above a
      // candidate, and every item tied with it, is a candidate too.
      CountRanks(candidate_keys, found, above_.data(), tied_.data());
      for (int64_t c = 0; c < found; ++c) {
        // A select, not a branch: whether a candidate is in the top k is a
        // coin toss the branch predictor loses.
        const Value term = values[candidates[c]] * Mean(above_[c], tied_[c]);
        total += above_[c] < k ? term : Value(0);
      }
      return total;
    }
    // The k largest keys of the real items, kept sorted while the candidates
    // are read (fewer if the row has fewer real items).
    Key* top = top_.data();
    int64_t kept = 0;
    for (int64_t c = 0; c < found; ++c) {
      const Key key = keys[candidates[c]];
      if (kept == k && key <= top[k - 1]) continue;
      int64_t j = kept < k ? kept++ : k - 1;
      for (; j > 0 && top[j - 1] < key; --j) top[j] = top[j - 1];
      top[j] = key;
    }
    if (kept == 0) return 0;
    // A run of equal keys in the top is a block; the last one's block may
    // continue past the top k, so it is counted over the candidates.
    const Key threshold = top[kept - 1];
    int64_t at_threshold = 0;
    for (int64_t c = 0; c < found; ++c) at_threshold += keys[candidates[c]] == threshold;
    for (int64_t start = 0; start < kept;) {
      int64_t stop = start + 1;
      while (stop < kept && top[stop] == top[start]) ++stop;
      const int64_t size = top[start] == threshold ? at_threshold : stop - start;
      const Value block_mean = Mean(start, size);
      for (int64_t p = start; p < stop; ++p) slot_mean_[p] = block_mean;
      start = stop;
    }
    for (int64_t c = 0; c < found; ++c) {
      const uint32_t item = candidates[c];
      const Key key = keys[item];
      if (key < threshold) continue;
      // The slot of the first top key equal to this one (top is descending).
      int64_t slot = 0;
      while (top[slot] > key) ++slot;
      total += values[item] * slot_mean_[slot];
    }
    return total;
  }

  const int64_t n_, k_;
  const Value* table_ = nullptr;
  std::vector<Key> keys_;
  std::vector<Entry> entries_, scratch_;
  std::vector<uint32_t> counts_[kBucketDepth];
  std::vector<uint32_t> candidates_, kept_;
  std::vector<Key> maxima_, candidate_keys_;
  std::vector<Signed> real_keys_, chosen_keys_;
  std::vector<int32_t> above_, tied_;
  std::vector<Key> top_;  // descending
  std::vector<Value> slot_mean_;
};

// Each value's histogram slot: a real value that is a whole number in
// [0, kSmallGains) its own, a negative one 0 (the ideal counts it as 0), and
// padding kSmallGains + 1. Returns whether every real value had a slot of its
// own (NaN has none), and sets `highest` to the largest real slot below
// kSmallGains. `valid` is null for a row without padding.
template <typename Value>
inline bool SmallWholeSlotsScalar(const Value* values, const bool* valid, int64_t n,
                                  int32_t* slots, int32_t* highest) {
  int32_t other = 0, top = 0;
  for (int64_t i = 0; i < n; ++i) {
    const Value value = values[i];
    const Value positive = value > Value(0) ? value : Value(0);
    const Value clamped = positive < Value(kSmallGains) ? positive : Value(kSmallGains);
    const int32_t slot = int32_t(clamped);
    const int32_t real = valid == nullptr || valid[i];
    other |= real & ((value != value) | (Value(slot) != positive) | (slot == kSmallGains));
    slots[i] = real ? slot : kSmallGains + 1;
    top = std::max(top, real & (slot < kSmallGains) ? slot : 0);
  }
  *highest = top;
  return other == 0;
}

template <typename Value>
inline bool SmallWholeSlots(const Value* values, const bool* valid, int64_t n, int32_t* slots,
                            int32_t* highest) {
  return SmallWholeSlotsScalar(values, valid, n, slots, highest);
}

#if defined(__SSE2__)
// Four floats to a step.
template <>
inline bool SmallWholeSlots<float>(const float* values, const bool* valid, int64_t n,
                                   int32_t* slots, int32_t* highest) {
  const __m128 zero = _mm_setzero_ps();
  const __m128 limit = _mm_set1_ps(float(kSmallGains));
  const __m128i none = _mm_set1_epi32(kSmallGains);
  const __m128i padding = _mm_set1_epi32(kSmallGains + 1);
  const __m128i zero_bits = _mm_setzero_si128();
  __m128i other = zero_bits, top = zero_bits;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m128 value = _mm_loadu_ps(values + i);
    const __m128 is_nan = _mm_cmpunord_ps(value, value);
    const __m128 positive = _mm_max_ps(value, zero);  // NaN gives 0; is_nan keeps it
    __m128i slot = _mm_cvttps_epi32(_mm_min_ps(positive, limit));
    const __m128 inexact = _mm_cmpneq_ps(_mm_cvtepi32_ps(slot), positive);
    __m128i bad = _mm_or_si128(_mm_castps_si128(_mm_or_ps(is_nan, inexact)),
                               _mm_cmpeq_epi32(slot, none));
    if (valid != nullptr) {
      int32_t four_valid;
      std::memcpy(&four_valid, valid + i, sizeof(four_valid));
      const __m128i bytes = _mm_cvtsi32_si128(four_valid);
      const __m128i real = _mm_cmpgt_epi32(
          _mm_unpacklo_epi16(_mm_unpacklo_epi8(bytes, zero_bits), zero_bits), zero_bits);
      bad = _mm_and_si128(bad, real);
      slot = _mm_or_si128(_mm_and_si128(real, slot), _mm_andnot_si128(real, padding));
    }
    other = _mm_or_si128(other, bad);
    // top = max(top, slot) over slots below kSmallGains (padding's is above).
    const __m128i counted = _mm_andnot_si128(
        _mm_cmpgt_epi32(slot, _mm_sub_epi32(none, _mm_set1_epi32(1))), slot);
    const __m128i greater = _mm_cmpgt_epi32(counted, top);
    top = _mm_or_si128(_mm_and_si128(greater, counted), _mm_andnot_si128(greater, top));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(slots + i), slot);
  }
  int32_t lanes[4], tops[4];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(lanes), other);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(tops), top);
  int32_t rest_highest = 0;  // the last n % 4 values, one at a time
  const bool rest_small = SmallWholeSlotsScalar(
      values + i, valid == nullptr ? nullptr : valid + i, n - i, slots + i, &rest_highest);
  *highest = std::max({tops[0], tops[1], tops[2], tops[3], rest_highest});
  return rest_small && (lanes[0] | lanes[1] | lanes[2] | lanes[3]) == 0;
}
#endif

// The entries that sort a floating type's own order keys.
template <typename Value>
using EntryOf = std::conditional_t<sizeof(Value) == 8, Wide, Packed>;

// The ideal of a row: RowSums::Sum for the row ranked by its own values,
// negative values counted as 0 (the ideal DCG of the gains). Equal values are
// interchangeable, so small whole numbers are counted, not ranked.
template <typename Value>
class IdealSums {
 public:
  using Key = typename EntryKey<EntryOf<Value>>::type;

  IdealSums(int64_t n, int64_t k) : n_(n), k_(k), sums_(n, k), keys_(n), positive_(n), slots_(n) {}

  void UseTable(const Value* table) {
    table_ = table;
    sums_.UseTable(table);
  }

  // `valid` is the row's mask of real items.

  Value Ideal(const Value* values, const bool* valid) {
    int32_t* slots = slots_.data();
    const bool padded = std::memchr(valid, 0, size_t(n_)) != nullptr;
    int32_t highest = 0;
    if (SmallWholeSlots(values, padded ? valid : nullptr, n_, slots, &highest)) {
      // From the largest gain down, until the top is filled: with a cut-off
      // the first gain or two usually fill it. The first few gains are each
      // counted in a vectorised pass; the rest, if any, in one histogram.
      const int64_t last = k_ > 0 ? std::min(k_, n_) : n_;
      Value total = 0;
      int64_t start = 0;
      int gain = highest;
      for (int pass = 0; gain > 0 && start < last && pass < kCountedGains; --gain, ++pass) {
        int32_t count = 0;
        for (int64_t i = 0; i < n_; ++i) count += slots[i] == gain;
        total += Value(gain) * (table_[start + count] - table_[start]);
        start += count;
      }
      if (gain > 0 && start < last) {
        // Four histograms, so that runs of one value do not wait on one counter.
        int32_t histograms[4][kSmallGains + 2] = {};
        for (int64_t i = 0; i < n_; ++i) ++histograms[i & 3][slots[i]];
        for (; gain > 0 && start < last; --gain) {
          const int64_t count = histograms[0][gain] + histograms[1][gain] +
                                histograms[2][gain] + histograms[3][gain];
          total += Value(gain) * (table_[start + count] - table_[start]);
          start += count;
        }
      }
      return total;
    }
    Key* keys = keys_.data();
    for (int64_t i = 0; i < n_; ++i) {
      const Value value = values[i];
      positive_[i] = value < 0 ? Value(0) : value;
      keys[i] = FloatKey<Value, Key>(positive_[i]) & (Key(0) - Key(valid[i]));
    }
    return sums_.Sum(keys, valid, positive_.data());
  }

 private:
  const int64_t n_, k_;
  const Value* table_ = nullptr;
  RowSums<EntryOf<Value>, Value> sums_;
  std::vector<Key> keys_;
  std::vector<Value> positive_;
  std::vector<int32_t> slots_;
};

// Per row: the weighted sum of `values` ranked by the scores, and with
// `ideal`, the ideal's (RowSums::Ideal) too.
template <typename Entry, typename Value>
void WeightedSumRows(const RowKeys<typename EntryKey<Entry>::type>& source, const Value* values,
                     const bool* valid, const Value* tables, int64_t rows_per_table, int64_t k,
                     Value* out, Value* ideal, int64_t first, int64_t last) {
  const int64_t n = source.n;
  RowSums<Entry, Value> sums(n, k);
  std::unique_ptr<IdealSums<Value>> ideals;
  if (ideal != nullptr) ideals = std::make_unique<IdealSums<Value>>(n, k);
  std::vector<typename EntryKey<Entry>::type> keys(n);
  for (int64_t row = first; row < last; ++row) {
    const Value* table = tables + (row / rows_per_table) * (n + 1);
    sums.UseTable(table);
    if (ideal != nullptr) ideals->UseTable(table);
    const Value* row_values = values + row * n;
    const bool* row_valid = valid + row * n;
    source.Fill(row, keys.data(), row_valid);
    out[row] = sums.Sum(keys.data(), row_valid, row_values);
    if (ideal != nullptr) ideal[row] = ideals->Ideal(row_values, row_valid);
  }
}

template <typename Value>
ffi::Error WeightedSumTyped(ffi::ThreadPool& pool, ffi::AnyBuffer& scores,
                            ffi::AnyBuffer& values, ffi::Buffer<ffi::PRED>& valid,
                            ffi::AnyBuffer& table, int64_t k, Value* out_data,
                            Value* ideal_data) {
  const ffi::DataType type = scores.element_type();
  int64_t rows, n;
  RowsAndLength(scores.dimensions(), &rows, &n);
  // One table for every row, or under vmap (which broadcasts every operand)
  // one per batch element, each shared by as many consecutive rows.
  const int64_t tables = int64_t(table.element_count()) / (n + 1);
  if (values.element_count() != scores.element_count() ||
      valid.element_count() != scores.element_count() ||
      int64_t(table.element_count()) != tables * (n + 1) || tables == 0 ||
      (rows > 0 && rows % tables != 0)) {
    return ffi::Error::InvalidArgument("lodestar weighted sum: operands of different sizes");
  }
  const int64_t rows_per_table = std::max<int64_t>(rows / tables, 1);
  const Value* value_data = static_cast<const Value*>(values.untyped_data());
  const Value* table_data = static_cast<const Value*>(table.untyped_data());
  const bool* valid_data = valid.typed_data();
  if (k >= n) k = 0;
  if (IsWide(type)) {
    RowKeys<uint64_t> source{scores.untyped_data(), type, n};
    ForRowBlocks(&pool, rows, n, [&](int64_t first, int64_t last) {
      WeightedSumRows<Wide, Value>(source, value_data, valid_data, table_data, rows_per_table, k,
                                   out_data, ideal_data, first, last);
    });
  } else {
    RowKeys<uint32_t> source{scores.untyped_data(), type, n};
    ForRowBlocks(&pool, rows, n, [&](int64_t first, int64_t last) {
      WeightedSumRows<Packed, Value>(source, value_data, valid_data, table_data, rows_per_table,
                                     k, out_data, ideal_data, first, last);
    });
  }
  return ffi::Error::Success();
}

ffi::Error CheckWeightedSumTypes(ffi::AnyBuffer& scores, ffi::AnyBuffer& values,
                                 ffi::AnyBuffer& table, ffi::DataType out_type) {
  if (!IsSupported(scores.element_type())) return Unsupported(scores.element_type());
  if (values.element_type() != table.element_type() || values.element_type() != out_type) {
    return ffi::Error::InvalidArgument("lodestar weighted sum: values and table differ in type");
  }
  if (values.element_type() != ffi::DataType::F32 && values.element_type() != ffi::DataType::F64) {
    return Unsupported(values.element_type());
  }
  return ffi::Error::Success();
}

template <typename Value>
Value* DataOf(ffi::Result<ffi::AnyBuffer>& buffer) {
  return static_cast<Value*>(buffer->untyped_data());
}

ffi::Error WeightedSumImpl(ffi::ThreadPool pool, ffi::AnyBuffer scores, ffi::AnyBuffer values,
                           ffi::Buffer<ffi::PRED> valid, ffi::AnyBuffer table, int64_t k,
                           ffi::Result<ffi::AnyBuffer> out) {
  ffi::Error checked = CheckWeightedSumTypes(scores, values, table, out->element_type());
  if (checked.failure()) return checked;
  if (values.element_type() == ffi::DataType::F32) {
    return WeightedSumTyped<float>(pool, scores, values, valid, table, k, DataOf<float>(out),
                                   nullptr);
  }
  return WeightedSumTyped<double>(pool, scores, values, valid, table, k, DataOf<double>(out),
                                  nullptr);
}

ffi::Error WeightedSumAndIdealImpl(ffi::ThreadPool pool, ffi::AnyBuffer scores,
                                   ffi::AnyBuffer values, ffi::Buffer<ffi::PRED> valid,
                                   ffi::AnyBuffer table, int64_t k,
                                   ffi::Result<ffi::AnyBuffer> out,
                                   ffi::Result<ffi::AnyBuffer> ideal) {
  ffi::Error checked = CheckWeightedSumTypes(scores, values, table, out->element_type());
  if (checked.failure()) return checked;
  if (ideal->element_type() != out->element_type()) {
    return ffi::Error::InvalidArgument("lodestar weighted sum: results differ in type");
  }
  if (values.element_type() == ffi::DataType::F32) {
    return WeightedSumTyped<float>(pool, scores, values, valid, table, k, DataOf<float>(out),
                                   DataOf<float>(ideal));
  }
  return WeightedSumTyped<double>(pool, scores, values, valid, table, k, DataOf<double>(out),
                                  DataOf<double>(ideal));
}


// ------------------------------------------------------------ normalized gain

// trec_eval's G (m_G.c), averaged over the orders of every tie block: the
// formulas of metrics/_normalized_gain.py (decision 0016 derives them), taken
// block by block along each row instead of position by position over the
// batch. An item at position p before k with gain g contributes
// g / log2(2 + C_p - S_p), C_p the ideal's cost down to p and S_p the gains
// at positions 0..p. Inside a tie block of m items holding c non-zero gains,
// the t-th position's gains sum to base + Y_t, where w, the non-zero gains
// among t draws, is hypergeometric, and given w, Y_t is the sum of a uniform
// w-subset of the block's non-zero gains. Its law is exact while it holds at
// most `atoms` distinct sums per w; past that, neighbouring sums are pooled
// into their weighted mean and the second moment lost is reported.

// A law of subset sums per size w = 1..c, `atoms` weighted sums each.
template <typename Value>
class SubsetSumLaws {
 public:
  explicit SubsetSumLaws(int64_t atoms)
      : atoms_(atoms), candidates_(2 * atoms), group_(2 * atoms), mass_(atoms),
        mean_(atoms), lost_(atoms) {}

  // The law of size w: its first used(w) atoms hold probability, ascending
  // in value; the others none.
  int64_t used(int64_t w) const { return used_[w]; }
  const Value* probability(int64_t w) const { return &probability_[w * atoms_]; }
  const Value* value(int64_t w) const { return &value_[w * atoms_]; }
  const Value* spread(int64_t w) const { return &spread_[w * atoms_]; }

  // Every non-zero gain equal: Z_w = w g, one sum per size, nothing pooled.
  void Equal(int64_t c, Value gain) {
    Reset(c);
    for (int64_t w = 1; w <= c; ++w) {
      probability_[w * atoms_] = 1;
      value_[w * atoms_] = Value(w) * gain;
      spread_[w * atoms_] = 0;
      used_[w] = 1;
    }
  }

  // The block's non-zero gains, ascending (a canonical order, so that pooled
  // sums do not depend on the order of the items): adding the j-th gain g
  // updates every w <= j as
  //   Z_j(w) = (j - w)/j Z_{j-1}(w) + w/j (Z_{j-1}(w - 1) + g),
  // w downwards, so that Z_{j-1}(w - 1) is still the old law when read.
  void Mixed(const Value* ascending, int64_t c) {
    Reset(c);
    const Value unit[3] = {1, 0, 0};  // Z(0): the sum 0 with probability 1
    for (int64_t j = 1; j <= c; ++j) {
      const Value g = ascending[j - 1];
      const Value size = Value(j);
      for (int64_t w = j; w >= 1; --w) {
        const Value keep = (size - Value(w)) / size;
        const Value take = Value(w) / size;
        const int64_t at = w * atoms_, below = (w - 1) * atoms_;
        Merge(&probability_[at], &value_[at], &spread_[at], used_[w], keep,
              w == 1 ? &unit[0] : &probability_[below], w == 1 ? &unit[1] : &value_[below],
              w == 1 ? &unit[2] : &spread_[below], w == 1 ? 1 : used_[w - 1], take, g);
        Compact(w);
      }
    }
  }

 private:
  struct Candidate {
    Value probability, value, spread;
  };

  void Reset(int64_t c) {
    const size_t size = size_t((c + 1) * atoms_);
    if (probability_.size() < size) {
      probability_.resize(size);
      value_.resize(size);
      spread_.resize(size);
    }
    used_.assign(size_t(c + 1), 0);
  }

  // The candidates of the new law in ascending value: Z(w) weighted by
  // `keep` and Z(w - 1) + g weighted by `take`, each already ascending, so a
  // merge orders them. Sums left with no probability are dropped: they add
  // nothing to any total below.
  void Merge(const Value* kept_p, const Value* kept_v, const Value* kept_s, int64_t kept,
             Value keep, const Value* taken_p, const Value* taken_v, const Value* taken_s,
             int64_t taken, Value take, Value g) {
    int64_t a = 0, b = 0;
    count_ = 0;
    for (;;) {
      while (a < kept && !(kept_p[a] * keep > 0)) ++a;
      while (b < taken && !(taken_p[b] * take > 0)) ++b;
      if (a == kept && b == taken) break;
      if (b == taken || (a < kept && !(taken_v[b] + g < kept_v[a]))) {
        candidates_[count_++] = {kept_p[a] * keep, kept_v[a], kept_s[a] * keep};
        ++a;
      } else {
        candidates_[count_++] = {taken_p[b] * take, taken_v[b] + g, taken_s[b] * take};
        ++b;
      }
    }
  }

  // The ordered candidates merged into the law of size w: equal sums (to a
  // few ulps) exactly; past `atoms` distinct sums, runs of neighbouring sums,
  // about equally many per run, into their probability-weighted mean, the
  // second moment about it that the merge loses added to the spread.
  void Compact(int64_t w) {
    const Value eps = std::numeric_limits<Value>::epsilon();
    int64_t distinct = 0;
    for (int64_t s = 0; s < count_; ++s) {
      const Value current = candidates_[s].value;
      const Value previous = candidates_[s == 0 ? 0 : s - 1].value;
      const Value tolerance = 256 * eps * (std::abs(current) + std::abs(previous));
      if (s == 0 || std::abs(current - previous) > tolerance) ++distinct;
      group_[s] = distinct - 1;
    }
    const int64_t groups = std::min(distinct, atoms_);
    if (distinct > atoms_) {
      for (int64_t s = 0; s < count_; ++s) group_[s] = (group_[s] * atoms_) / distinct;
    }
    std::fill_n(mass_.begin(), groups, Value(0));
    std::fill_n(mean_.begin(), groups, Value(0));
    std::fill_n(lost_.begin(), groups, Value(0));
    for (int64_t s = 0; s < count_; ++s) {
      mass_[group_[s]] += candidates_[s].probability;
      mean_[group_[s]] += candidates_[s].probability * candidates_[s].value;
    }
    for (int64_t a = 0; a < groups; ++a) {
      mean_[a] = mass_[a] != 0 ? mean_[a] / mass_[a] : Value(0);
    }
    for (int64_t s = 0; s < count_; ++s) {
      const Candidate& c = candidates_[s];
      const Value deviation = c.value - mean_[group_[s]];
      lost_[group_[s]] += c.spread + c.probability * deviation * deviation;
    }
    const int64_t at = w * atoms_;
    for (int64_t a = 0; a < groups; ++a) {
      probability_[at + a] = mass_[a];
      value_[at + a] = mass_[a] > 0 ? mean_[a] : Value(0);
      spread_[at + a] = lost_[a];
    }
    used_[w] = groups;
  }

  int64_t atoms_;
  std::vector<Value> probability_, value_, spread_;  // (c + 1) x atoms, row 0 unused
  std::vector<int64_t> used_;
  std::vector<Candidate> candidates_;
  int64_t count_ = 0;
  std::vector<int64_t> group_;
  std::vector<Value> mass_, mean_, lost_;
};

template <typename Value>
class GainRow {
 public:
  GainRow(int64_t n, int64_t atoms)
      : n_(n), size_at_(n), placed_(n), ranked_(n), cost_(n), nonzero_(n), hypergeometric_(n + 1),
        laws_(atoms) {}

  // One row: G's expected terms summed (found), the second moment pooled
  // away (pooled), and the ideal's cost down to the row's last position.
  void Run(const Value* gains, const int32_t* above, const int32_t* tied, const bool* valid,
           const Value* ideal, int64_t k, Value* found, Value* pooled, Value* cost_total) {
    const int64_t n = n_;
    const int64_t end = std::clamp<int64_t>(k, 0, n);
    Value running = 0;
    for (int64_t p = 0; p < n; ++p) {
      const Value cost = ideal[p];
      running += cost < 1 ? Value(1) : cost;  // max(I_p, 1); NaN stays NaN
      cost_[p] = running;
    }
    *cost_total = running;
    // The items of the blocks starting before k, at their block's positions.
    std::fill(size_at_.begin(), size_at_.end(), 0);
    std::fill(placed_.begin(), placed_.end(), 0);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t start = above[i];
      if (!valid[i] || start < 0 || start >= end) continue;
      const int64_t size = tied[i];
      if (size < 1 || start + size > n || (size_at_[start] != 0 && size_at_[start] != size) ||
          placed_[start] >= size) {
        return Malformed(found, pooled);
      }
      size_at_[start] = int32_t(size);
      ranked_[start + placed_[start]++] = gains[i];
    }
    Value base = 0, found_sum = 0, pooled_sum = 0;
    for (int64_t start = 0; start < end;) {
      const int64_t size = size_at_[start];
      if (size == 0) break;  // past the real items
      if (placed_[start] != size) return Malformed(found, pooled);
      Block(ranked_.data() + start, size, std::min(end - start, size), base,
            cost_.data() + start, &found_sum, &pooled_sum);
      Value block_total = 0;
      for (int64_t q = start; q < start + size; ++q) block_total += ranked_[q];
      base += block_total;
      start += size;
    }
    *found = found_sum;
    *pooled = pooled_sum;
  }

 private:
  static void Malformed(Value* found, Value* pooled) {
    *found = *pooled = std::numeric_limits<Value>::quiet_NaN();
  }

  // A block of `size` gains with `cut` positions before k, `base` the gains
  // of the blocks above it, `cost` the ideal's cost from its first position.
  void Block(const Value* gains, int64_t size, int64_t cut, Value base, const Value* cost,
             Value* found, Value* pooled) {
    int64_t c = 0;
    bool mixed = false;
    for (int64_t q = 0; q < size; ++q) {
      if (gains[q] != 0) {
        mixed = mixed || (c > 0 && gains[q] != nonzero_[0]);
        nonzero_[c++] = gains[q];
      }
    }
    if (c == 0) return;
    if (mixed) {
      std::sort(nonzero_.begin(), nonzero_.begin() + c);
      laws_.Mixed(nonzero_.data(), c);
    } else {
      laws_.Equal(c, nonzero_[0]);
    }
    // hypergeometric_[w]: the probability that the first t draws of the
    // block's order hold w of its c non-zero gains; `none`, that they hold
    // none. One more draw from the R left: p'(w) = (p(w) (R - (c - w)) +
    // p(w - 1) (c - w + 1)) / R.
    std::fill_n(hypergeometric_.begin(), c + 1, Value(0));
    Value none = 1;
    const Value count = Value(c);
    for (int64_t t = 1; t <= cut; ++t) {
      const Value remaining = Value(size) - Value(t - 1);
      const int64_t most = std::min(c, t);
      for (int64_t w = most; w >= 1; --w) {
        const Value v = Value(w);
        const Value previous = w == 1 ? none : hypergeometric_[w - 1];
        hypergeometric_[w] =
            (hypergeometric_[w] * (remaining - (count - v)) + previous * (count - v + 1)) /
            remaining;
      }
      none = none * (remaining - count) / std::max(remaining, Value(1));
      // The ideal's cost down to the t-th position, less the gain above.
      const Value slack = cost[t - 1] - base;
      const Value drawn = Value(t);
      for (int64_t w = 1; w <= most; ++w) {
        const Value chance = hypergeometric_[w];
        if (!(chance > 0)) continue;  // a count t draws cannot give
        const Value* probability = laws_.probability(w);
        const Value* value = laws_.value(w);
        const Value* spread = laws_.spread(w);
        Value expected = 0, lost = 0;
        for (int64_t a = 0, used = laws_.used(w); a < used; ++a) {
          lost += spread[a];
          if (probability[a] > 0) {
            expected += probability[a] * ((value[a] / drawn) / std::log2(2 + (slack - value[a])));
          }
        }
        *found += chance * expected;
        *pooled += chance * lost;
      }
    }
  }

  int64_t n_;
  std::vector<int32_t> size_at_, placed_;  // per block start: its size, its items placed
  std::vector<Value> ranked_;              // the gains at the blocks' positions
  std::vector<Value> cost_;                // the ideal's cost down to each position
  std::vector<Value> nonzero_;             // a block's non-zero gains
  std::vector<Value> hypergeometric_;
  SubsetSumLaws<Value> laws_;
};

template <typename Value>
void GainSumsTyped(ffi::ThreadPool& pool, ffi::AnyBuffer& gains, const int32_t* above,
                   const int32_t* tied, const bool* valid, ffi::AnyBuffer& ideal, const int32_t* k,
                   int64_t rows, int64_t n, int64_t atoms, Value* found, Value* pooled,
                   Value* cost_total) {
  const Value* gain_data = static_cast<const Value*>(gains.untyped_data());
  const Value* ideal_data = static_cast<const Value*>(ideal.untyped_data());
  ForRowBlocks(&pool, rows, n, [&](int64_t first, int64_t last) {
    GainRow<Value> row(n, atoms);
    for (int64_t r = first; r < last; ++r) {
      row.Run(gain_data + r * n, above + r * n, tied + r * n, valid + r * n, ideal_data + r * n,
              k[r], found + r, pooled + r, cost_total + r);
    }
  });
}

ffi::Error GainSumsImpl(ffi::ThreadPool pool, ffi::AnyBuffer gains, ffi::Buffer<ffi::S32> above,
                        ffi::Buffer<ffi::S32> tied, ffi::Buffer<ffi::PRED> valid,
                        ffi::AnyBuffer ideal, ffi::Buffer<ffi::S32> k, int64_t atoms,
                        ffi::Result<ffi::AnyBuffer> found, ffi::Result<ffi::AnyBuffer> pooled,
                        ffi::Result<ffi::AnyBuffer> cost_total) {
  const ffi::DataType type = gains.element_type();
  int64_t rows, n;
  RowsAndLength(gains.dimensions(), &rows, &n);
  const size_t items = gains.element_count();
  if (above.element_count() != items || tied.element_count() != items ||
      valid.element_count() != items || ideal.element_count() != items ||
      int64_t(k.element_count()) != rows || int64_t(found->element_count()) != rows ||
      int64_t(pooled->element_count()) != rows || int64_t(cost_total->element_count()) != rows) {
    return ffi::Error::InvalidArgument("lodestar gain sums: operands of different sizes");
  }
  if (ideal.element_type() != type || found->element_type() != type ||
      pooled->element_type() != type || cost_total->element_type() != type) {
    return ffi::Error::InvalidArgument("lodestar gain sums: operands differ in type");
  }
  if (atoms < 1 || atoms > 4096) {
    return ffi::Error::InvalidArgument("lodestar gain sums: atoms outside [1, 4096]");
  }
  const int32_t* above_data = above.typed_data();
  const int32_t* tied_data = tied.typed_data();
  const bool* valid_data = valid.typed_data();
  const int32_t* k_data = k.typed_data();
  switch (type) {
    case ffi::DataType::F32:
      GainSumsTyped<float>(pool, gains, above_data, tied_data, valid_data, ideal, k_data, rows, n,
                           atoms, DataOf<float>(found), DataOf<float>(pooled),
                           DataOf<float>(cost_total));
      return ffi::Error::Success();
    case ffi::DataType::F64:
      GainSumsTyped<double>(pool, gains, above_data, tied_data, valid_data, ideal, k_data, rows,
                            n, atoms, DataOf<double>(found), DataOf<double>(pooled),
                            DataOf<double>(cost_total));
      return ffi::Error::Success();
    default:
      return Unsupported(type);
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

XLA_FFI_DEFINE_HANDLER_SYMBOL(LodestarTopTieBlocks, TopTieBlocksImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::Buffer<ffi::PRED>>()
                                  .Attr<int64_t>("k")
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

namespace {

// The operands both weighted sums take: scores, values, valid, table, k.
auto WeightedSumOperands() {
  return ffi::Ffi::Bind()
      .Ctx<ffi::ThreadPool>()
      .Arg<ffi::AnyBuffer>()
      .Arg<ffi::AnyBuffer>()
      .Arg<ffi::Buffer<ffi::PRED>>()
      .Arg<ffi::AnyBuffer>()
      .Attr<int64_t>("k");
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(LodestarWeightedSum, WeightedSumImpl,
                              WeightedSumOperands().Ret<ffi::AnyBuffer>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(LodestarWeightedSumAndIdeal, WeightedSumAndIdealImpl,
                              WeightedSumOperands().Ret<ffi::AnyBuffer>().Ret<ffi::AnyBuffer>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(LodestarBlockTotals, BlockTotalsImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(LodestarGainSums, GainSumsImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::PRED>>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Attr<int64_t>("atoms")
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
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
      {"lodestar_weighted_sum_and_ideal", reinterpret_cast<void*>(LodestarWeightedSumAndIdeal)},
      {"lodestar_block_totals", reinterpret_cast<void*>(LodestarBlockTotals)},
      {"lodestar_top_tie_blocks", reinterpret_cast<void*>(LodestarTopTieBlocks)},
      {"lodestar_gain_sums", reinterpret_cast<void*>(LodestarGainSums)},
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

PyMODINIT_FUNC PyInit__kernels(void) {
  PyObject* module = PyModule_Create(&kModule);
  // Tests read the lengths at which a kernel changes algorithm.
  if (module != nullptr &&
      PyModule_AddIntConstant(module, "COUNTED_ROW_MAX", long(kCountedRowMax)) != 0) {
    Py_DECREF(module);
    return nullptr;
  }
  return module;
}
