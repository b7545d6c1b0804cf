// Feeds arbitrary bytes parsed as the wire messages the gRPC servers and clients receive (the first
// byte picks the message: InitializeRequest, PushDenseRequest, SaveReply, EvictReply,
// RegisterRequest, GetStateReply's JobState, LeaseTaskReply, LookupRequest) into the conversion
// functions that bounds-check them before any implementation runs (rpc/grpc/proto_convert.h).
// Asserts that a rejection is INVALID_ARGUMENT and that an accepted value converts back to a
// message that is accepted again and converts to the same bytes (ToProto . FromProto is
// idempotent).
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_util.h"
#include "google/protobuf/stubs/logging.h"
#include "shoal/rpc/grpc/proto_convert.h"

namespace shoal::fuzz {
namespace {

using namespace rpc_internal;  // NOLINT(google-build-using-namespace): the conversions

std::string Bytes(const google::protobuf::Message& message) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  CHECK(message.SerializeToCodedStream(&coded));
  return out;
}

void CheckRejection(const absl::Status& status) {
  CHECK(absl::IsInvalidArgument(status)) << status;
}

// `convert(proto)` -> StatusOr<value>; `to_proto(value, &proto)`.
template <typename Proto, typename Convert, typename ToProtoFn>
void RoundTrip(const Proto& in, Convert convert, ToProtoFn to_proto) {
  auto value = convert(in);
  if (!value.ok()) return CheckRejection(value.status());
  Proto once;
  to_proto(*value, &once);
  auto again = convert(once);
  CHECK(again.ok()) << "FromProto rejects what ToProto wrote: " << again.status();
  Proto twice;
  to_proto(*again, &twice);
  CHECK_EQ(Bytes(once), Bytes(twice));
}

template <typename T, typename Proto>
absl::StatusOr<T> ByOutParam(const Proto& in) {
  T value;
  RETURN_IF_ERROR(FromProto(in, &value));
  return value;
}

void Convert(int which, absl::string_view bytes) {
  const auto parse = [&](google::protobuf::Message& m) {
    return m.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
  };
  switch (which) {
    case 0: {
      rpc::InitializeRequest r;
      if (parse(r)) {
        RoundTrip(r.spec(), ByOutParam<ModelSpec, rpc::ModelSpec>,
                  [](const ModelSpec& v, rpc::ModelSpec* p) { ToProto(v, p); });
      }
      break;
    }
    case 1: {
      rpc::PushDenseRequest r;
      if (!parse(r)) break;
      for (const rpc::Tensor& t : r.grads()) {
        RoundTrip(
            t, [](const rpc::Tensor& p) { return FromProto(p, "grads[i]"); },
            [](const Tensor& v, rpc::Tensor* p) { ToProto(v, p); });
      }
      break;
    }
    case 2: {
      rpc::SaveReply r;
      if (parse(r)) {
        RoundTrip(r.file(), ByOutParam<ShardFileInfo, rpc::ShardFileInfo>,
                  [](const ShardFileInfo& v, rpc::ShardFileInfo* p) { ToProto(v, p); });
      }
      break;
    }
    case 3: {
      rpc::EvictReply r;
      if (!parse(r)) break;
      for (const rpc::TableEviction& e : r.tables()) {
        RoundTrip(
            e, [](const rpc::TableEviction& p) { return FromProto(p); },
            [](const TableEviction& v, rpc::TableEviction* p) { ToProto(v, p); });
      }
      break;
    }
    case 4: {
      rpc::RegisterRequest r;
      if (parse(r)) {
        RoundTrip(
            r.task(), [](const rpc::TaskId& p) { return FromProto(p); },
            [](const TaskId& v, rpc::TaskId* p) { ToProto(v, p); });
      }
      break;
    }
    case 5: {
      rpc::JobState r;
      if (parse(r)) {
        RoundTrip(
            r, [](const rpc::JobState& p) { return FromProto(p); },
            [](const JobState& v, rpc::JobState* p) { ToProto(v, p); });
      }
      break;
    }
    case 6: {
      rpc::LeaseTaskReply r;
      if (parse(r)) {
        RoundTrip(
            r, [](const rpc::LeaseTaskReply& p) { return FromProto(p); },
            [](const TaskLease& v, rpc::LeaseTaskReply* p) { ToProto(v, p); });
      }
      break;
    }
    default: {
      rpc::LookupRequest r;
      if (!parse(r)) break;
      absl::StatusOr<LookupMode> mode = FromProto(r.mode());
      if (mode.ok()) {
        CHECK(FromProto(ToProto(*mode)).ok());
      } else {
        CheckRejection(mode.status());
      }
      break;
    }
  }
}

}  // namespace
}  // namespace shoal::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Invalid UTF-8 in string fields is logged by protobuf on every parse: noise here.
  static auto* quiet = google::protobuf::SetLogHandler(nullptr);
  (void)quiet;
  if (size == 0) return 0;
  shoal::fuzz::Convert(data[0] % 8, shoal::fuzz::AsView(data + 1, size - 1));
  return 0;
}
