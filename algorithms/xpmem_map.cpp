// XPMEM behind PeerMap (peer_map.hpp): built where meson found XPMEM's library and header.
//
// Once per process: xpmem_make exposes the whole address space (readable and writable by the
// same user: permission 0600), and the key is published; the segment lives as long as the
// process. Per peer process, once: xpmem_get. Per range: xpmem_attach of the range rounded out
// to 2 MiB (so neighbouring buffers share an attachment), cached per peer, least recently used
// out first; a detach happens only on eviction. XPMEM keeps an attachment following the
// owner's page tables, so a range the owner frees and maps again reads the new pages, as Open
// MPI's vader relies on too.
#include "peer_map.hpp"

#include "loom_c_api.h"
#include "transport.hpp"

#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include <unistd.h>

extern "C" {
#include <xpmem.h>
}

namespace loom {

namespace {

constexpr std::uintptr_t kAlign = std::uintptr_t(2) << 20;

class XpmemMap final : public PeerMap {
public:
    const char* name() const override { return "XPMEM"; }

    std::int64_t own_key() override
    {
        std::lock_guard lock(mutex_);
        if (!made_) {
            made_ = true;
            segid_ = xpmem_make(nullptr, XPMEM_MAXADDR_SIZE, XPMEM_PERMIT_MODE, reinterpret_cast<void*>(0600));
        }
        return segid_ < 0 ? -1 : std::int64_t(segid_);
    }

    const std::byte* map(std::int64_t key, const void* remote, std::size_t bytes) override
    {
        const auto at = reinterpret_cast<std::uintptr_t>(remote);
        std::lock_guard lock(mutex_);
        Peer& peer = peer_of(key);
        ++tick_;
        for (Range& r : peer.ranges)
            if (r.local != nullptr && r.base <= at && at + bytes <= r.base + r.length) {
                r.used = tick_;
                return r.local + (at - r.base);
            }
        const std::uintptr_t base = at & ~(kAlign - 1), end = (at + bytes + kAlign - 1) & ~(kAlign - 1);
        xpmem_addr addr{peer.apid, off_t(base)};
        void* local = xpmem_attach(addr, end - base, nullptr);
        if (local == reinterpret_cast<void*>(-1))
            throw TransportError(LOOM_ERR_INTERNAL, "xpmem: xpmem_attach of " + std::to_string(end - base) +
                                                        " bytes failed: " + std::strerror(errno));
        Range* slot = &peer.ranges[0];
        for (Range& r : peer.ranges)
            if (r.used < slot->used) slot = &r;
        if (slot->local != nullptr) xpmem_detach(slot->local);
        *slot = Range{base, end - base, static_cast<std::byte*>(local), tick_};
        return slot->local + (at - base);
    }

private:
    struct Range {
        std::uintptr_t base = 0;
        std::size_t length = 0;
        std::byte* local = nullptr; // null: empty
        std::uint64_t used = 0;
    };
    struct Peer {
        std::int64_t key;
        xpmem_apid_t apid;
        Range ranges[kCachedRanges];
    };

    // The peer process that published `key`, got on first use (a process's peers are few:
    // the ranks of its node).
    Peer& peer_of(std::int64_t key)
    {
        for (Peer& p : peers_)
            if (p.key == key) return p;
        const xpmem_apid_t apid = xpmem_get(xpmem_segid_t(key), XPMEM_RDWR, XPMEM_PERMIT_MODE, nullptr);
        if (apid < 0)
            throw TransportError(LOOM_ERR_INTERNAL, std::string("xpmem: xpmem_get failed: ") + std::strerror(errno));
        peers_.push_back(Peer{key, apid, {}});
        return peers_.back();
    }

    std::mutex mutex_; // threads of one process serve different communicators at once
    bool made_ = false;
    xpmem_segid_t segid_ = -1;
    std::uint64_t tick_ = 0;
    std::vector<Peer> peers_;
};

} // namespace

PeerMap* xpmem_map()
{
    // Without the device (the kernel module is not loaded) there is nothing to try.
    static XpmemMap* const map = access("/dev/xpmem", R_OK | W_OK) == 0 ? new XpmemMap : nullptr;
    return map;
}

} // namespace loom
