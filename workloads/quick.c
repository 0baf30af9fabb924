// build: -O1 -g
// quick: exits at once with status 0.
int main(void) { return 0; }
