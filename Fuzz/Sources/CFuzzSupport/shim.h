#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

// libFuzzer's driver (LLVM 11 and later), linked by `-sanitize=fuzzer`: the fuzzer's @main hands it the command
// line and the function that tests one input. libFuzzer's own main() is not used, since SwiftPM links every
// executable with `main` aliased to its module's entry point.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*UserCb)(const uint8_t *Data, size_t Size));
