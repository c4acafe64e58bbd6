from tracer.cli import main

main()
