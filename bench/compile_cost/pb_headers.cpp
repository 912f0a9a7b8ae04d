// Compile-cost TU: every protobuf message header (lancet/pb/*), used for nothing. What
// it costs is what merely declaring the messages costs every TU that includes them: a
// message must cost nothing more until it is encoded or decoded.
#include <lancet/pb/compression_scheme.hpp>
#include <lancet/pb/encodings_v2_0.hpp>
#include <lancet/pb/encodings_v2_1.hpp>
#include <lancet/pb/file.hpp>
#include <lancet/pb/file2.hpp>
#include <lancet/pb/index.hpp>
#include <lancet/pb/message.hpp>
#include <lancet/pb/table.hpp>
#include <lancet/pb/wire.hpp>

int main() { return 0; }
