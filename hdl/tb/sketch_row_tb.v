// Testbench for the generated SketchRow (target/hdl/sketch_row.v, 8 lanes).
//
// Reads one line per clock from +vectors=<file>:
//   in_valid code level0_0 .. level0_7 level1_0 .. level1_7 level2_0 .. level2_7 level3_0 .. level3_7
// (hex; code packed, lane j in bits 2j+1:2j) applies it, gives one rising
// edge, and after the edge writes each output beat to +out=<file> as
// "<clock> <o0> .. <o7>" (decimal clock, hex fp16 bits), the sampling
// point of hdl::sim::tick.
// tests/verilog_cosim.rs compares it with attention::engine::sketch_row.
`timescale 1ns / 1ps
module sketch_row_tb;
    reg clock = 1'b0;
    reg in_valid = 1'b0;
    reg [15:0] code = 16'd0;
    reg [15:0] lv [0:31];
    wire out_valid;
    wire [15:0] o0, o1, o2, o3, o4, o5, o6, o7;

    sketch_row dut (
        .clock(clock), .in_valid(in_valid),
        .code$0(code[1:0]), .code$1(code[3:2]), .code$2(code[5:4]), .code$3(code[7:6]),
        .code$4(code[9:8]), .code$5(code[11:10]), .code$6(code[13:12]), .code$7(code[15:14]),
        .level0$0(lv[0]), .level0$1(lv[1]), .level0$2(lv[2]), .level0$3(lv[3]),
        .level0$4(lv[4]), .level0$5(lv[5]), .level0$6(lv[6]), .level0$7(lv[7]),
        .level1$0(lv[8]), .level1$1(lv[9]), .level1$2(lv[10]), .level1$3(lv[11]),
        .level1$4(lv[12]), .level1$5(lv[13]), .level1$6(lv[14]), .level1$7(lv[15]),
        .level2$0(lv[16]), .level2$1(lv[17]), .level2$2(lv[18]), .level2$3(lv[19]),
        .level2$4(lv[20]), .level2$5(lv[21]), .level2$6(lv[22]), .level2$7(lv[23]),
        .level3$0(lv[24]), .level3$1(lv[25]), .level3$2(lv[26]), .level3$3(lv[27]),
        .level3$4(lv[28]), .level3$5(lv[29]), .level3$6(lv[30]), .level3$7(lv[31]),
        .out_valid(out_valid),
        .out_data$0(o0), .out_data$1(o1), .out_data$2(o2), .out_data$3(o3),
        .out_data$4(o4), .out_data$5(o5), .out_data$6(o6), .out_data$7(o7)
    );

    integer fin, fout, n, t, j;
    reg [8*1024-1:0] vec_path, out_path;

    task read_line;
        begin
            n = $fscanf(fin, "%h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h\n",
                        in_valid, code,
                        lv[0], lv[1], lv[2], lv[3], lv[4], lv[5], lv[6], lv[7],
                        lv[8], lv[9], lv[10], lv[11], lv[12], lv[13], lv[14], lv[15],
                        lv[16], lv[17], lv[18], lv[19], lv[20], lv[21], lv[22], lv[23],
                        lv[24], lv[25], lv[26], lv[27], lv[28], lv[29], lv[30], lv[31]);
        end
    endtask

    initial begin
        for (j = 0; j < 32; j = j + 1) lv[j] = 16'd0;
        if (!$value$plusargs("vectors=%s", vec_path) || !$value$plusargs("out=%s", out_path)) begin
            $display("usage: +vectors=<file> +out=<file>");
            $finish;
        end
        fin = $fopen(vec_path, "r");
        fout = $fopen(out_path, "w");
        if (fin == 0 || fout == 0) begin
            $display("cannot open vector or output file");
            $finish;
        end
        t = 0;
        read_line;
        while (n == 34) begin
            #1 clock = 1'b1;
            #1 clock = 1'b0;
            if (out_valid) $fwrite(fout, "%0d %h %h %h %h %h %h %h %h\n", t, o0, o1, o2, o3, o4, o5, o6, o7);
            t = t + 1;
            read_line;
        end
        $fwrite(fout, "end %0d\n", t);
        $fclose(fout);
        $finish;
    end
endmodule
