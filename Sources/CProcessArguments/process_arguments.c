// Swift's CommandLine.arguments on Linux finds argv by walking back from `environ` to the start
// of the process's initial stack. A library preloaded before the program (libfaketime, which
// sets variables of its own in its constructor) moves `environ` to the heap, and the walk then
// finds no argument at all: the binary printed its usage under faketime. glibc hands every
// .init_array function the real argc and argv; this one keeps them.
#include <stddef.h>
#include "CProcessArguments.h"

static int saved_count;
static char **saved_arguments;

static void keep_arguments(int argc, char **argv, char **envp) {
    (void)envp;
    saved_count = argc;
    saved_arguments = argv;
}

__attribute__((section(".init_array"), used)) static void (*keep_arguments_entry)(int, char **, char **) = keep_arguments;

int process_arguments_count(void) { return saved_count; }

const char *process_argument(int index) {
    return index >= 0 && index < saved_count ? saved_arguments[index] : NULL;
}
