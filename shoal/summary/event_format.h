// Constants of TensorBoard's event files (prose: docs/formats.md, "TensorBoard event files";
// messages: event.proto). Records are TFRecord-framed (shoal/io/tfrecord_format.h).
#pragma once

namespace shoal {

// file_version of the first Event of every file. TensorBoard reads version 2 as "restarts are
// marked by SessionLog.START", not "a smaller step means a restart".
inline constexpr char kEventFileVersion[] = "brain.Event:2";

// Event files are named <prefix><10-digit unix seconds>.<hostname><suffix>; TensorBoard loads
// every file in a run directory whose name contains "tfevents".
inline constexpr char kEventFileNamePrefix[] = "events.out.tfevents.";

}  // namespace shoal
