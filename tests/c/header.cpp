// The header compiles as C++ (g++ -std=c++11 -Wall -Wextra -Werror -pedantic) and links: the
// declarations are inside extern "C" and the enums have a fixed int32_t underlying type.
#include "pidguard.h"

#include <cstdio>
#include <cstring>
#include <type_traits>

static_assert(sizeof(pidguard_verdict) == sizeof(int32_t), "enums are int32_t-sized");
static_assert(std::is_standard_layout<pidguard_terminate_result>::value, "plain struct");
static_assert(std::is_standard_layout<pidguard_guard_verdict>::value, "plain struct");
static_assert(std::is_standard_layout<pidguard_stop_result>::value, "plain struct");

int main() {
    if (std::strcmp(pidguard_strerror(PIDGUARD_EPANIC), "panic") != 0) return 1;
    pidguard_verdict v = PIDGUARD_VERDICT_NONE;
    pidguard_reason r = PIDGUARD_REASON_NONE;
    if (pidguard_judge(0, nullptr, &v, &r) != PIDGUARD_EINVALID_ARGUMENT) return 2;
    if (v != PIDGUARD_VERDICT_NONE) return 3;
    pidguard_entry *e = nullptr;
    if (pidguard_entry_new(42, "linux1:m:b:1:2:-", &e) != PIDGUARD_OK) return 4;
    size_t n = 0;
    if (pidguard_entry_encode(e, nullptr, 0, &n) != PIDGUARD_OK || n == 0) return 5;
    pidguard_entry_free(e);
    std::printf("header.cpp: pidguard %s, 5 checks passed\n", pidguard_version());
    return 0;
}
