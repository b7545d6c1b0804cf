#include "shoal/io/gzip.h"

#include <zlib.h>

#include "absl/strings/str_cat.h"

namespace shoal {

absl::StatusOr<std::string> GunzipString(absl::string_view compressed, uint64_t max_output_bytes) {
  std::string out;
  z_stream zs{};
  // 16 + MAX_WBITS: expect a gzip wrapper.
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
    return absl::InternalError("zlib inflateInit2 failed");
  }
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  zs.avail_in = static_cast<uInt>(compressed.size());
  char buffer[1 << 16];
  int rc = Z_OK;
  while (true) {
    zs.next_out = reinterpret_cast<Bytef*>(buffer);
    zs.avail_out = sizeof(buffer);
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) break;
    out.append(buffer, sizeof(buffer) - zs.avail_out);
    if (out.size() > max_output_bytes) {
      inflateEnd(&zs);
      return absl::ResourceExhaustedError(
          absl::StrCat("gzip data expands beyond ", max_output_bytes, " bytes"));
    }
    if (rc == Z_STREAM_END) {
      if (zs.avail_in == 0) break;
      // Another gzip member follows.
      if (inflateReset(&zs) != Z_OK) break;
    } else if (zs.avail_in == 0 && zs.avail_out != 0) {
      rc = Z_BUF_ERROR;  // input ended inside a member
      break;
    }
  }
  inflateEnd(&zs);
  if (rc != Z_STREAM_END) {
    return absl::DataLossError(absl::StrCat("corrupt or truncated gzip data after ", out.size(),
                                            " output bytes (zlib code ", rc, ")"));
  }
  return out;
}

absl::StatusOr<std::string> GzipString(absl::string_view data) {
  z_stream zs{};
  if (deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return absl::InternalError("zlib deflateInit2 failed");
  }
  std::string out;
  out.resize(deflateBound(&zs, data.size()));
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) return absl::InternalError("zlib deflate did not finish");
  return out;
}

}  // namespace shoal
