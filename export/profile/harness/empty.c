/* An empty program on the same runtime: what a model's smallest program costs beyond it is the
 * model's flash and RAM. */
int main(void) { return 0; }
