// Message-size limits of the gRPC transport, shared by the server (grpc_server.h) and the client
// (grpc_channel.h). Both ends set gRPC's send and receive limits to the configured value, and the
// client splits big requests and replies into messages that fit (chunking.h), so a model of any
// size crosses the wire without meeting gRPC's 4 MiB default or protobuf's 2 GiB ceiling.
#pragma once

#include <cstdint>

#include "absl/time/time.h"

namespace shoal {

// Default limit of one gRPC message, each direction.
inline constexpr int64_t kDefaultMaxMessageBytes = int64_t{64} << 20;  // 64 MiB
// The accepted range: small enough limits make chunks too small to hold a table row of the
// largest dim, large ones overflow gRPC's int sizes.
inline constexpr int64_t kMinMaxMessageBytes = int64_t{16} << 10;  // 16 KiB
inline constexpr int64_t kMaxMaxMessageBytes = int64_t{1} << 30;   // 1 GiB

// The longest one WaitForVersion call blocks a server thread; a longer timeout is cut to this and
// the caller, seeing DEADLINE_EXCEEDED, asks again (so the server notices callers that left).
inline constexpr absl::Duration kMaxWaitForVersion = absl::Seconds(60);

}  // namespace shoal
