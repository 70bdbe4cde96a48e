// The process's arguments as the C runtime handed them to the program, before main.
#ifndef C_PROCESS_ARGUMENTS_H
#define C_PROCESS_ARGUMENTS_H

/// The argument count given to the program's initializers (0 before they ran).
int process_arguments_count(void);

/// Argument `index` (0 is the program), or NULL out of range.
const char *process_argument(int index);

#endif
