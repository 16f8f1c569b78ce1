// Single copy by mapping: a view of another process's memory inside this one, so a rank of the
// single-copy family (single_copy.hpp) copies or reduces straight from a peer's user buffer,
// with no system call per piece and no bounce buffer (Linux CMA, the fallback, copies through
// process_vm_readv into local memory before it can reduce).
//
// The mechanism is XPMEM (xpmem_map.cpp: built where meson finds its library, used where
// /dev/xpmem opens). Each process exposes its whole address space once (xpmem_make), publishes
// the key in its mailbox of the communicator's segment, and maps the ranges it reads
// (xpmem_get once per peer process, xpmem_attach per range, kept in a small cache: the next
// call on the same buffers maps nothing). Costs: an attach is a system call and page faults on
// first touch; a cached range costs a lookup. Limits: host memory on one node; a view is
// readable while its range stays among the last few the cache keeps for that process (every
// call maps at most two ranges per peer, the cache keeps kCachedRanges).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace loom {

class PeerMap {
public:
    virtual ~PeerMap() = default;
    // "XPMEM", for verbose output.
    virtual const char* name() const = 0;
    // What the others need to map this process's memory (published in the mailbox); negative
    // if this process cannot expose it.
    virtual std::int64_t own_key() = 0;
    // A readable view of `bytes` at address `remote` of the process that published `key`.
    // Throws TransportError if the range cannot be mapped.
    virtual const std::byte* map(std::int64_t key, const void* remote, std::size_t bytes) = 0;
    // How many ranges one process's cache keeps: every call reads through at most two ranges of
    // a peer (its input and its output), which stay mapped while it runs.
    static constexpr int kCachedRanges = 8;
};

// This process's XPMEM mapping, made on first use; null where loom was built without XPMEM or
// the kernel module is absent (no /dev/xpmem).
PeerMap* xpmem_map();

// For tests whose ranks are threads of one process: the view of an address is the address.
// Counts the ranges it was asked for, so a test can tell that the mapped path ran.
class SameProcessMap final : public PeerMap {
public:
    const char* name() const override { return "same process"; }
    std::int64_t own_key() override { return 0; }
    const std::byte* map(std::int64_t key, const void* remote, std::size_t bytes) override;
    std::size_t maps() const { return maps_.load(std::memory_order_relaxed); }

private:
    std::atomic<std::size_t> maps_{0}; // every rank's thread maps through one object
};

} // namespace loom
