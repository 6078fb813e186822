// AeroGPU command stream writer (aerogpu_cmd.h): stream header + size-prefixed packets,
// each padded to 4 bytes. Two backings: a growable vector (portable builds, tests) and a
// fixed span (a WDDM runtime-provided DMA buffer). Appends never overrun: on failure they
// return nullptr and latch an error; span users flush and retry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

extern "C" {
#include "../../protocol/aerogpu_cmd.h"
}

namespace aerogpu {

enum class CmdError { None, OutOfSpace, TooLarge };

class CmdWriter {
public:
    // Vector mode.
    CmdWriter() : span_(nullptr), cap_(0) { reset(); }
    // Span mode over buf[0..cap).
    CmdWriter(uint8_t *buf, size_t cap) : span_(buf), cap_(cap) { reset(); }

    void reset() {
        pending_size_ = 0;
        len_ = 0;
        packets_ = 0;
        err_ = CmdError::None;
        if (!span_) vec_.clear();
        aerogpu_cmd_stream_header h{};
        h.magic = AEROGPU_CMD_STREAM_MAGIC;
        h.abi_version = AEROGPU_ABI_VERSION_U32;
        h.size_bytes = sizeof(h);
        write_raw(&h, sizeof(h));
    }

    // Appends a packet of type P (zeroed, header filled) followed by payload bytes and NUL
    // padding; returns the packet for the caller to fill, or nullptr.
    template <class P> P *append(uint32_t opcode, const void *payload = nullptr, size_t payload_len = 0) {
        size_t unpadded = sizeof(P) + payload_len;
        if (payload_len > AEROGPU_MAX_SHADER_BYTES * 4 || unpadded < payload_len) {
            err_ = CmdError::TooLarge;
            return nullptr;
        }
        static_assert(sizeof(P) <= sizeof(scratch_), "packet larger than the scratch area");
        commit();
        size_t size = (unpadded + 3) & ~size_t(3);
        uint8_t *p = reserve(size);
        if (!p) return nullptr;
        std::memset(p, 0, size);
        if (payload_len) std::memcpy(p + sizeof(P), payload, payload_len);
        std::memset(scratch_, 0, sizeof(P));
        auto *hdr = reinterpret_cast<aerogpu_cmd_hdr *>(scratch_);
        hdr->opcode = opcode;
        hdr->size_bytes = static_cast<uint32_t>(size);
        pending_off_ = static_cast<size_t>(p - base());
        pending_size_ = sizeof(P);
        packets_++;
        return reinterpret_cast<P *>(scratch_);
    }

    // Patches the stream header's size and returns the stream.
    const uint8_t *finish() {
        commit();
        uint32_t n = static_cast<uint32_t>(len_);
        std::memcpy(base() + offsetof(aerogpu_cmd_stream_header, size_bytes), &n, 4);
        return base();
    }

    size_t size() const { return len_; }
    uint32_t packet_count() const { return packets_; }
    bool empty() const { return packets_ == 0; }
    CmdError error() const { return err_; }
    size_t capacity() const { return span_ ? cap_ : SIZE_MAX; }

private:
    void commit() {
        if (pending_size_) std::memcpy(base() + pending_off_, scratch_, pending_size_);
        pending_size_ = 0;
    }

    uint8_t *base() { return span_ ? span_ : vec_.data(); }

    uint8_t *reserve(size_t n) {
        if (span_) {
            if (n > cap_ || len_ > cap_ - n) {
                err_ = CmdError::OutOfSpace;
                return nullptr;
            }
        } else {
            if (len_ + n > (size_t(256) << 20)) { // the KMD's hard cap anyway
                err_ = CmdError::TooLarge;
                return nullptr;
            }
            vec_.resize(len_ + n);
        }
        uint8_t *p = base() + len_;
        len_ += n;
        return p;
    }

    void write_raw(const void *d, size_t n) {
        uint8_t *p = reserve(n);
        if (p) std::memcpy(p, d, n);
    }

    std::vector<uint8_t> vec_;
    uint8_t *span_;
    size_t cap_;
    size_t len_ = 0;
    uint32_t packets_ = 0;
    CmdError err_ = CmdError::None;
    alignas(16) uint8_t scratch_[128] = {};
    size_t pending_off_ = 0, pending_size_ = 0;
};

} // namespace aerogpu
