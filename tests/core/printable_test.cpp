// Names from the data shown on a terminal: control characters and bytes that are not UTF-8 escaped,
// the rest (newlines, tabs, any language's letters) as they are.

#include <gtest/gtest.h>

#include <string>

#include "feeder/util/printable.h"

namespace feeder {
namespace {

TEST(Printable, ControlsAndInvalidBytesAreEscapedTextIsNot) {
  EXPECT_EQ(printable("class\x1b[2J/x\r.jpg"), "class\\x1B[2J/x\\x0D.jpg");
  EXPECT_EQ(printable("a\nb\tc"), "a\nb\tc");
  EXPECT_EQ(printable("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  EXPECT_EQ(printable("x\xff.jpg"), "x\\xFF.jpg");
  EXPECT_EQ(printable("\xc2\x9b" "31m"), "\\xC2\\x9B31m");  // CSI as a C1 control
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xED\\xA0\\x80");  // an encoded surrogate is not UTF-8
  EXPECT_EQ(printable("\x7f"), "\\x7F");
}

}  // namespace
}  // namespace feeder
