// page_array.hpp: a growable array of pointer-like values on pages of its own, grown in place.
// Threads: none of its own; the owner's lock guards it (a shard's timer queue).
// Why:     a std::vector that doubles copies its contents into a new block under the shard's
//          lock (4 MB for a heap of 512 K timers: a stall of a millisecond or more, page faults
//          of the new block included, while due tasks wait) and frees the old block to malloc,
//          which may keep it resident for reuse (2-4 MB at 1 M timers in a small program). Here
//          the array is its own mapping (mmap) and grows with mremap: the kernel moves the page
//          tables, nothing is copied, nothing old stays behind, and capacity not yet written is
//          address space, not resident memory.
// Cost:    the same element access as a vector's; growth is a system call per doubling (at most
//          ~30 in an array's life), with no copy.
#pragma once
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <new>
#include <span>
#include <type_traits>

namespace kairos::detail {

// The sanitizers do not see mremap: ThreadSanitizer keeps the old range's shadow, and when the
// kernel hands that range to another mapping it reports the new owner's first writes as races
// with the old owner's. Under a sanitizer the array grows by copying into a fresh mapping and
// unmapping the old one (both intercepted); the Release build's tests cover mremap.
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__) || defined(KAIROS_SANITIZED)
inline constexpr bool kPageArrayCopies = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
inline constexpr bool kPageArrayCopies = true;
#else
inline constexpr bool kPageArrayCopies = false;
#endif
#else
inline constexpr bool kPageArrayCopies = false;
#endif

// Fault injection for tests (tests/stress/regression_v3_test.cpp): while set, every growth
// fails as it does when memory is short. Private to the engine (core/src): not installed.
inline std::atomic<bool> g_refuse_growth_for_testing{false};

template <class T>
class PageArray {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

 public:
  PageArray() = default;
  PageArray(const PageArray&) = delete;
  PageArray& operator=(const PageArray&) = delete;
  PageArray(PageArray&& o) noexcept : data_(o.data_), size_(o.size_), capacity_(o.capacity_) {
    o.data_ = nullptr;
    o.size_ = o.capacity_ = 0;
  }
  PageArray& operator=(PageArray&& o) noexcept {
    if (this != &o) {
      release();
      data_ = o.data_;
      size_ = o.size_;
      capacity_ = o.capacity_;
      o.data_ = nullptr;
      o.size_ = o.capacity_ = 0;
    }
    return *this;
  }
  ~PageArray() { release(); }

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  std::size_t capacity() const noexcept { return capacity_; }
  T& operator[](std::size_t i) noexcept { return data_[i]; }
  const T& operator[](std::size_t i) const noexcept { return data_[i]; }
  T& front() noexcept { return data_[0]; }
  const T& front() const noexcept { return data_[0]; }
  T& back() noexcept { return data_[size_ - 1]; }
  std::span<const T> items() const noexcept { return {data_, size_}; }

  // Throws std::bad_alloc when the array cannot grow (nothing changed then).
  void push_back(T v) {
    if (size_ == capacity_) reserve(capacity_ == 0 ? kPageBytes / sizeof(T) : capacity_ * 2);
    data_[size_++] = v;
  }
  // size() < capacity(): the caller checked (no growth, no throw).
  void push_within_capacity(T v) noexcept { data_[size_++] = v; }
  void pop_back() noexcept { --size_; }
  void clear() noexcept { size_ = 0; }

  // Size n, every new element value-initialised (the ring of a sorted run: null slots).
  void resize_zeroed(std::size_t n) {
    reserve(n);
    if (n > size_) std::memset(static_cast<void*>(data_ + size_), 0, (n - size_) * sizeof(T));
    size_ = n;
  }

  void assign(std::span<const T> items) {
    reserve(items.size());
    if (!items.empty()) std::memcpy(static_cast<void*>(data_), items.data(), items.size() * sizeof(T));
    size_ = items.size();
  }

  // Capacity for at least n elements without a throw: false (nothing changed) if the array
  // cannot grow. Grows at least geometrically, so a caller that asks for a little more each
  // time makes O(log n) system calls.
  bool try_reserve(std::size_t n) noexcept {
    if (n <= capacity_) return true;
    try {
      reserve(std::max(n, 2 * capacity_));
      return true;
    } catch (const std::bad_alloc&) {
      return false;
    }
  }

  // Capacity for at least n elements, rounded up to whole pages. Pages never written stay out
  // of the resident set.
  void reserve(std::size_t n) {
    if (n <= capacity_) return;
    if (g_refuse_growth_for_testing.load(std::memory_order_relaxed)) throw std::bad_alloc();  // relaxed: a test switch
    const std::size_t bytes = (n * sizeof(T) + kPageBytes - 1) / kPageBytes * kPageBytes;
    void* p;
    if (data_ == nullptr || kPageArrayCopies) {
      p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
      if (data_ != nullptr) {
        std::memcpy(p, static_cast<const void*>(data_), size_ * sizeof(T));
        ::munmap(data_, capacity_ * sizeof(T));
      }
    } else {
      p = ::mremap(data_, capacity_ * sizeof(T), bytes, MREMAP_MAYMOVE);
      if (p == MAP_FAILED) throw std::bad_alloc();
    }
    data_ = static_cast<T*>(p);
    capacity_ = bytes / sizeof(T);
  }

 private:
  static constexpr std::size_t kPageBytes = 4096;

  void release() noexcept {
    if (data_ != nullptr) ::munmap(data_, capacity_ * sizeof(T));
  }

  T* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

}  // namespace kairos::detail
