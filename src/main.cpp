// qdq-doctor command line (placeholder until the commands land).
#include <cstdio>

int main()
{
    std::puts("qdq-doctor");
    return 0;
}
