from voe.cli import main

main()
