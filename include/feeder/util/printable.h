#pragma once

// Text for a terminal that may hold names from the data (file names, tar members): a control
// character other than a newline or a tab, and a byte that is not UTF-8, is shown as \xNN, so that
// a name cannot move the cursor, rewrite the line (a CR) or start an escape sequence.
//
// Thread safety: a pure function.

#include <string>
#include <string_view>

namespace feeder {

std::string printable(std::string_view text);

}  // namespace feeder
