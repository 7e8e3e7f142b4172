#pragma once

// libjpeg reports an error through a callback that must not return. It jumps back to the setjmp in
// the function that called libjpeg, which throws; everything with a destructor in that function is
// declared before its setjmp, so the jump skips no destructor. Shared by the decoder and the
// encoder (jpeg_decoder.cpp, jpeg_encoder.cpp).

#include <csetjmp>
#include <cstdio>  // before jpeglib.h, which uses FILE

#include <jpeglib.h>

namespace feeder::detail {

struct JpegErrorManager {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

// The error_exit of a JpegErrorManager: keeps the message and jumps back.
[[noreturn]] inline void jpeg_jump_on_error(j_common_ptr cinfo) {
  auto* errors = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, errors->message);
  std::longjmp(errors->jump, 1);
}

}  // namespace feeder::detail
