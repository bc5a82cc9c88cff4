from gpu2npu.cli import main

if __name__ == "__main__":
    main()
