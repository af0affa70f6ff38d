#include <yajl/yajl_parse.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_version.h>

/// Turns off yajl's own UTF-8 check of strings: `JSONTextValidator` has checked every byte before yajl sees it, and
/// more strictly (overlong forms, encoded surrogates, code points above U+10FFFF). `yajl_config` is variadic, which
/// Swift cannot call.
static inline void codablestore_yajl_skip_string_validation(yajl_handle handle) {
    yajl_config(handle, yajl_dont_validate_strings, 1);
}
